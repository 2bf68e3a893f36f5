//! The fast description of a kernel, as pyoxide/_launch/fastplan.py builds it from the
//! manifest (`FastPlan`): read once, when a launcher is made. Its attributes:
//!
//! - `kernel`: the entry symbol, for messages and the launch record;
//! - `params`: one `FastParam` per argument a caller passes (`type`, the Rust scalar or
//!   element type; `array`; `mutable`; `dims`, a shaped array's dimension codes;
//!   `length`, a slice's length code; `align`, `pitch` and `nonzero`, the extra rules of
//!   an array a tensor map describes; `lanes`, a record of integers by value, `[u64; 3]`:
//!   (how many, its alignment)), then the derived parameters, which no caller passes (see
//!   derived.rs);
//! - `grid`: how a plain call is sized (`GridRule`: `kind` "elements", "stride",
//!   "tiles", "persistent" or "rows", `param`, `block`, `tile`, `per_block`,
//!   `blocks_per_sm`, `least_block`, `columns_per_warp`, `cols`, `cluster`), or None when only
//!   configured calls may take the fast path;
//! - `shared_mem`: the dynamic shared memory of a plain call;
//! - `derived`: the derived parameter's source, or None;
//! - `bucket`: `(param, axis, low, high)` per key extent of a tuned choice: the launcher
//!   takes a call only when `low < extent <= high` for each (pyoxide/_launch/tune_space.py).
//!
//! Dimension codes: -1 any extent, `n >= 0` exactly `n`, `-2 - id` the shared name `id`.

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

use crate::derived::Derived;
use crate::params::Layout;

pub enum GridKind {
    /// `ceil(len(param) / per_block)` blocks of `block.x` threads.
    Elements { per_block: u64 },
    /// `max(1, min(ceil(len(param) / per_block), blocks_per_sm × multiprocessors))`
    /// blocks of `block.x` threads, which stride over `param`.
    Stride { per_block: u64, blocks_per_sm: u32 },
    /// One block per `tile` of the shaped `param`'s extents (x over its last).
    Tiles { tile: [u32; 3] },
    /// `min(tiles, max(1, blocks_per_sm × multiprocessors / cluster)) × cluster` blocks on
    /// x, each block (or each cluster of `cluster` blocks along x) walking tiles, the
    /// clusters no more than the launcher's `active_clusters` where known
    /// (pyoxide/_launch/clusters.py: `persistent_blocks`).
    Persistent {
        tile: [u32; 3],
        blocks_per_sm: u32,
        cluster: u32,
    },
    /// One block per row of `param`, of `min(block.x, max(least, 32 · ceil(row length /
    /// columns_per_warp)))` threads. A row is `cols`'s value of elements (an integer
    /// parameter, which must divide `param`'s length), or, where `cols` is None, the 2-D
    /// `param`'s second extent. With `blocks_per_sm` > 0, at most `blocks_per_sm ×
    /// multiprocessors` blocks (the kernel walks rows).
    Rows {
        least: u32,
        columns_per_warp: u64,
        cols: Option<usize>,
        blocks_per_sm: u32,
    },
}

pub struct Grid {
    pub kind: GridKind,
    pub param: usize,
    pub block: [u32; 3],
}

pub struct Plan {
    pub kernel: String,
    pub layout: Layout,
    pub grid: Option<Grid>,
    pub shared_mem: u32,
    pub derived: Option<Derived>,
    pub bucket: Vec<Extent>,
    /// `#[dependent_launch]` (and the knob on): launched with programmatic stream
    /// serialisation where the driver has `cuLaunchKernelEx` (the launcher picks its entry
    /// point once, as it is built).
    pub dependent: bool,
}

/// One extent a tuned choice's launcher takes: axis `axis` of parameter `param` (a
/// slice's length is its axis 0) in `low < extent <= high`.
pub struct Extent {
    pub param: usize,
    pub axis: usize,
    pub low: u64,
    pub high: u64,
}

impl Extent {
    pub fn holds(&self, layout: &Layout, buf: &[u8]) -> bool {
        let extent = layout.shape_of(buf, self.param).get(self.axis).copied();
        extent.is_some_and(|e| self.low < e && e <= self.high)
    }
}

fn triple(t: (u32, u32, u32)) -> [u32; 3] {
    [t.0, t.1, t.2]
}

impl Plan {
    pub fn read(plan: &Bound<'_, PyAny>) -> PyResult<Plan> {
        let py = plan.py();
        let kernel: String = plan.getattr(pyo3::intern!(py, "kernel"))?.extract()?;
        let layout = Layout::new(&plan.getattr(pyo3::intern!(py, "params"))?)?;
        let shared_mem: u32 = plan.getattr(pyo3::intern!(py, "shared_mem"))?.extract()?;
        let derived = plan.getattr(pyo3::intern!(py, "derived"))?;
        let derived = if derived.is_none() {
            None
        } else {
            Some(Derived::read(&derived, &layout)?)
        };
        let grid = plan.getattr(pyo3::intern!(py, "grid"))?;
        let grid = if grid.is_none() {
            None
        } else {
            Some(read_grid(&grid, &layout)?)
        };
        let mut bucket = Vec::new();
        for b in plan.getattr(pyo3::intern!(py, "bucket"))?.try_iter()? {
            let (param, axis, low, high): (usize, usize, u64, u64) = b?.extract()?;
            let rank = match layout.shaped_rank(param) {
                Some(rank) => rank,
                None if layout.is_array(param) => 1,
                None => 0,
            };
            if axis >= rank || low >= high {
                return Err(PyValueError::new_err(
                    "a bucket bound names an axis of an array parameter and low < high",
                ));
            }
            bucket.push(Extent {
                param,
                axis,
                low,
                high,
            });
        }
        let dependent: bool = plan.getattr(pyo3::intern!(py, "dependent"))?.extract()?;
        Ok(Plan {
            kernel,
            layout,
            grid,
            shared_mem,
            derived,
            bucket,
            dependent,
        })
    }
}

fn read_grid(grid: &Bound<'_, PyAny>, layout: &Layout) -> PyResult<Grid> {
    let py = grid.py();
    let get = |name: &str| grid.getattr(pyo3::types::PyString::intern(py, name));
    let kind: String = get("kind")?.extract()?;
    let param: usize = get("param")?.extract()?;
    let block = triple(get("block")?.extract()?);
    let positive = |xs: &[u32]| !xs.contains(&0);
    if !positive(&block) {
        return Err(PyValueError::new_err(
            "a grid rule's block must be positive",
        ));
    }
    let kind = match kind.as_str() {
        "elements" => {
            let per_block: u64 = get("per_block")?.extract()?;
            if per_block == 0 || !layout.is_array(param) {
                return Err(PyValueError::new_err(
                    "an elements rule needs an array parameter and a positive per_block",
                ));
            }
            GridKind::Elements { per_block }
        }
        "stride" => {
            let per_block: u64 = get("per_block")?.extract()?;
            let blocks_per_sm: u32 = get("blocks_per_sm")?.extract()?;
            if per_block == 0 || blocks_per_sm == 0 || !layout.is_array(param) {
                return Err(PyValueError::new_err(
                    "a stride rule needs an array parameter, a positive per_block and \
                     blocks_per_sm",
                ));
            }
            GridKind::Stride {
                per_block,
                blocks_per_sm,
            }
        }
        "tiles" | "persistent" => {
            let tile = triple(get("tile")?.extract()?);
            if !positive(&tile) || !layout.is_shaped(param) {
                return Err(PyValueError::new_err(
                    "a tile rule needs a shaped array parameter and a positive tile",
                ));
            }
            if kind == "tiles" {
                GridKind::Tiles { tile }
            } else {
                let blocks_per_sm: u32 = get("blocks_per_sm")?.extract()?;
                let cluster: u32 = get("cluster")?.extract()?;
                GridKind::Persistent {
                    tile,
                    blocks_per_sm: blocks_per_sm.max(1),
                    cluster: cluster.max(1),
                }
            }
        }
        "rows" => {
            let least: u32 = get("least_block")?.extract()?;
            let columns_per_warp: u64 = get("columns_per_warp")?.extract()?;
            let cols: i64 = get("cols")?.extract()?;
            let cols = usize::try_from(cols).ok();
            let rows_known = match cols {
                None => layout.shaped_rank(param) == Some(2),
                Some(c) => layout.is_array(param) && layout.is_integer(c),
            };
            if least == 0 || least > block[0] || columns_per_warp == 0 || !rows_known {
                return Err(PyValueError::new_err(
                    "a rows rule needs a 2-D shaped parameter, or an array and an integer \
                     cols parameter, and 0 < least block <= block",
                ));
            }
            GridKind::Rows {
                least,
                columns_per_warp,
                cols,
                blocks_per_sm: get("blocks_per_sm")?.extract()?,
            }
        }
        other => {
            return Err(PyValueError::new_err(format!(
                "unknown grid rule {other:?} (elements, stride, tiles, persistent or rows)"
            )));
        }
    };
    Ok(Grid { kind, param, block })
}
