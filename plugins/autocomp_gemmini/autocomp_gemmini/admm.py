"""Gold result of the ADMM problem (mirrors harness/harness_admm.c in float32)."""

from __future__ import annotations

import numpy as np

from .inputs import fill_elem


def admm_inputs(p: dict, seed: int) -> dict[str, np.ndarray]:
    nx, nu, n = p["admm_nx"], p["admm_nu"], p["admm_horizon"]
    f32 = np.float32

    def r(s, k):
        return fill_elem(seed * 8 + s, k, True)

    at = (f32(0.02) * r(1, nx * nx)).reshape(nx, nx)
    at[np.arange(nx), np.arange(nx)] += f32(0.9)
    return {
        "AT": at,
        "BT": (f32(0.1) * r(2, nu * nx)).reshape(nu, nx),
        "KT": (f32(0.1) * r(3, nx * nu)).reshape(nx, nu),
        "x0": r(4, nx),
        "d": (f32(0.1) * r(5, (n - 1) * nu)).reshape(n - 1, nu),
        "y": (f32(0.1) * r(6, (n - 1) * nu) + dual_offsets((n - 1) * nu)).reshape(n - 1, nu),
    }


def dual_offsets(count: int) -> np.ndarray:
    """+1 on every 4th dual from the 2nd, -1 on every 4th from the 4th (|u + y| is about 0.14
    without them): the clip to [umin, umax] = [-0.5, 0.5] binds on both sides at every seed.
    Mirrors harness_admm.c."""
    k = np.arange(count)
    return np.where(k % 4 == 1, 1.0, np.where(k % 4 == 3, -1.0, 0.0)).astype(np.float32)


def admm_gold(p: dict, seed: int) -> np.ndarray:
    """Concatenation of x[N][nx], u[N-1][nu], z[N-1][nu], y[N-1][nu] (float32)."""
    nx, nu, n = p["admm_nx"], p["admm_nu"], p["admm_horizon"]
    v = admm_inputs(p, seed)
    x = np.zeros((n, nx), np.float32)
    u = np.zeros((n - 1, nu), np.float32)
    x[0] = v["x0"]
    for t in range(n - 1):
        u[t] = -(x[t] @ v["KT"]) - v["d"][t]
        x[t + 1] = x[t] @ v["AT"] + u[t] @ v["BT"]
    z = np.clip(u + v["y"], np.float32(p["admm_umin"]), np.float32(p["admm_umax"])).astype(
        np.float32
    )
    y = (v["y"] + u - z).astype(np.float32)
    return np.concatenate([x.ravel(), u.ravel(), z.ravel(), y.ravel()])
