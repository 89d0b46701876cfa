"""Session 21 debug variants of the persistent Gluon attention kernel's helpers, swapped into
``tritonfp8._kernels.attention_gluon`` before the first compile by scripts/gpu_persist_debug.py (Triton resolves
a kernel's helpers from the module's globals when it compiles)."""
from triton.experimental import gluon
from triton.experimental.gluon import language as gl

from tritonfp8._kernels import attention_gluon as ag


@gluon.jit
def tile_of_noorder(r, nprog, pid, num_m_blocks, num_bh, head_group, Sq, Sk, Hq, GROUP: gl.constexpr,
                    BLOCK_N: gl.constexpr, CAUSAL: gl.constexpr):
    """_tile_of without the causal heaviest-first order (launch order as the dense kernel)."""
    lin = r * nprog + gl.where(r % 2 == 0, pid, nprog - 1 - pid)
    valid = lin < num_m_blocks * num_bh
    pid_m = lin % num_m_blocks
    bh = lin // num_m_blocks
    q_first = pid_m * 128
    n_blocks = gl.cdiv(Sk, BLOCK_N)
    if CAUSAL:
        n_blocks = gl.minimum(n_blocks, gl.cdiv(gl.maximum(q_first + 128 + Sk - Sq, 0), BLOCK_N))
    h = bh % Hq
    return valid, q_first, bh // Hq, h, h // GROUP, n_blocks


@gluon.jit
def tile_of_glorder(r, nprog, pid, num_m_blocks, num_bh, head_group, Sq, Sk, Hq, GROUP: gl.constexpr,
                    BLOCK_N: gl.constexpr, CAUSAL: gl.constexpr):
    """_tile_of with the causal order written in Gluon (no call into the Triton helper)."""
    lin = r * nprog + gl.where(r % 2 == 0, pid, nprog - 1 - pid)
    valid = lin < num_m_blocks * num_bh
    pid_m = lin % num_m_blocks
    bh = lin // num_m_blocks
    if CAUSAL:
        per_group = num_m_blocks * head_group
        g = lin // per_group
        rr = lin - g * per_group
        heads_here = gl.maximum(gl.minimum(head_group, num_bh - g * head_group), 1)
        m_rev = rr // heads_here
        pid_m = num_m_blocks - 1 - m_rev
        bh = g * head_group + (rr - m_rev * heads_here)
    q_first = pid_m * 128
    n_blocks = gl.cdiv(Sk, BLOCK_N)
    if CAUSAL:
        n_blocks = gl.minimum(n_blocks, gl.cdiv(gl.maximum(q_first + 128 + Sk - Sq, 0), BLOCK_N))
    h = bh % Hq
    return valid, q_first, bh // Hq, h, h // GROUP, n_blocks


@gluon.jit
def serial_loopmask(q_half, k_ring, v_ring, ones_smem, ready, empty, m_i, l_i, acc, qk_scale, Sk, row0, off, n_unm,
                    n_blocks, base, s_layout: gl.constexpr, p_layout: gl.constexpr, o_row_layout: gl.constexpr,
                    BLOCK_N: gl.constexpr, STAGES: gl.constexpr, LOG2_P_SCALE: gl.constexpr,
                    PERMUTE_P: gl.constexpr, CAUSAL: gl.constexpr, ROW_SUM_MMA: gl.constexpr):
    """_serial with the masked steps in a runtime loop (no static guarded steps)."""
    for j in range(0, n_unm):
        m_i, l_i, acc = ag._step(j, q_half, k_ring, v_ring, ones_smem, ready, empty, m_i, l_i, acc, qk_scale, Sk,
                                 row0, off, s_layout, p_layout, o_row_layout, BLOCK_N, STAGES, LOG2_P_SCALE, False,
                                 PERMUTE_P, CAUSAL, ROW_SUM_MMA, base)
    for j in range(n_unm, n_blocks):
        m_i, l_i, acc = ag._step(j, q_half, k_ring, v_ring, ones_smem, ready, empty, m_i, l_i, acc, qk_scale, Sk,
                                 row0, off, s_layout, p_layout, o_row_layout, BLOCK_N, STAGES, LOG2_P_SCALE, True,
                                 PERMUTE_P, CAUSAL, ROW_SUM_MMA, base)
    return m_i, l_i, acc


@gluon.jit
def serial_guardloop(q_half, k_ring, v_ring, ones_smem, ready, empty, m_i, l_i, acc, qk_scale, Sk, row0, off, n_unm,
                     n_blocks, base, s_layout: gl.constexpr, p_layout: gl.constexpr, o_row_layout: gl.constexpr,
                     BLOCK_N: gl.constexpr, STAGES: gl.constexpr, LOG2_P_SCALE: gl.constexpr,
                     PERMUTE_P: gl.constexpr, CAUSAL: gl.constexpr, ROW_SUM_MMA: gl.constexpr):
    """_serial with the unmasked loop inside ``if n_unm > 0`` (is a zero-trip loop the fault?)."""
    if n_unm > 0:
        for j in range(0, n_unm):
            m_i, l_i, acc = ag._step(j, q_half, k_ring, v_ring, ones_smem, ready, empty, m_i, l_i, acc, qk_scale,
                                     Sk, row0, off, s_layout, p_layout, o_row_layout, BLOCK_N, STAGES,
                                     LOG2_P_SCALE, False, PERMUTE_P, CAUSAL, ROW_SUM_MMA, base)
    for j in range(n_unm, n_blocks):
        m_i, l_i, acc = ag._step(j, q_half, k_ring, v_ring, ones_smem, ready, empty, m_i, l_i, acc, qk_scale, Sk,
                                 row0, off, s_layout, p_layout, o_row_layout, BLOCK_N, STAGES, LOG2_P_SCALE, True,
                                 PERMUTE_P, CAUSAL, ROW_SUM_MMA, base)
    return m_i, l_i, acc


VARIANTS = {
    "base": {},
    "noorder": {"_tile_of": tile_of_noorder},
    "glorder": {"_tile_of": tile_of_glorder},
    "loopmask": {"_serial": serial_loopmask},
    "noorder_loopmask": {"_tile_of": tile_of_noorder, "_serial": serial_loopmask},
    "guardloop": {"_serial": serial_guardloop},
    "noorder_guardloop": {"_tile_of": tile_of_noorder, "_serial": serial_guardloop},
}


def apply(name: str) -> None:
    for k, v in VARIANTS[name].items():
        setattr(ag, k, v)
