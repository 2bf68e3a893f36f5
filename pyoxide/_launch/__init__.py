"""The launch runtime: a built crate as a module of kernels (module.py), its launchers
(kernel.py, and the compiled ones of _native, described by fastplan.py), the argument
rules (args.py, arrays.py, shapes.py, records.py), the launch configuration and policies
(config.py, policy.py), devices and streams (devices.py), variants (variants.py) and
PyTorch operator plans (torch_plan.py). It knows no particular kernel, and nothing of the
testing harness."""
