"""scripts/train_tiny on the CPU emulator, briefly: the tiny model with pyoxide's layer
norm and softmax ops (and their backward kernels) follows the same model in plain
PyTorch step for step. (The issue's bar, 200 steps on a GPU, is the same script.)"""

from __future__ import annotations

import subprocess
import sys

from helpers.bundled import emu_kernels_manifest
from helpers.fixtures import REPO_DIR


def test_train_tiny_follows_plain_pytorch_on_the_emulator() -> None:
    small = ["--steps", "12", "--batch", "4", "--seq", "8", "--dim", "32", "--vocab", "64"]
    r = subprocess.run(
        [sys.executable, str(REPO_DIR / "scripts" / "train_tiny"), "--device", "cpu",
         "--manifest", str(emu_kernels_manifest()), "--every", "4", *small],
        capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip
    assert r.returncode == 0, r.stdout + r.stderr
    assert "max relative difference over 12 steps" in r.stdout and ": OK" in r.stdout
