"""CRUISE's own settings: its router, the dual path, self-consistency, CoV and Algorithm 1's
thresholds (the paper's values, "paper" below). A peer system's configuration has none of them
(agents/config/ composes the groups; agents/settings.py checks them)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from agents.config.choices import YesNoMode
from agents.settings import AMOUNT, COUNT, THRESHOLD, ranged

TauRetScope = Literal["real_time", "context"]  # agents/cruise/stages/s9_finalize.py


@dataclass
class CruiseSettings:
    # --- the router (paper, section 3.1; agents/cruise/stages/s1_route.py) ---------------------
    use_router: bool = True
    # "text": the paper's router writes both labels as text; "yes_no": each label is read from
    # the router's next-token probabilities of yes/no
    router_mode: YesNoMode = "text"
    # router_mode "yes_no": the real-time label is yes when P(yes) / (P(yes) + P(no)) reaches this
    # (the external label's cut, router_external_min_p, is shared with QA-Dragon's tool router)
    router_real_time_min_p: float = ranged(0.5, THRESHOLD)
    router_max_tokens: int = ranged(24, COUNT)

    # --- the dual path and self-consistency (ours) -------------------------------------------
    use_dual_path: bool = True  # also generate the non-RAG answer
    # Without context the RAG and non-RAG prompts are the same; the second answer is then sampled
    # at this temperature (seeded) so that the check asks whether the answer is stable.
    # 0.0: greedy, and the second answer is a copy of the first.
    direct_temperature: float = ranged(0.7, AMOUNT)
    use_self_consistency: bool = True
    # Two answers that normalise to the same string are consistent without asking the VLM.
    consistency_skip_identical: bool = True
    consistency_max_tokens: int = ranged(8, COUNT)  # room for "The answers agree: yes"

    # --- chain-of-verification (paper, section 3.3; agents/cruise/stages/s8_verify.py) ----------
    use_cov: bool = True
    # CoV: the paper puts CONFIDENCE first so that a cut-off output is still scored. By default
    # generation stops at a REASONING or SUB-QUESTIONS label that starts a new line, i.e. after
    # the confidence line when the model follows the format, and after REASONING when it writes
    # that first (s8_verify.py); cov_max_tokens leaves room for that case. cov_full_output lets
    # the model write everything for the trace.
    cov_full_output: bool = False
    cov_max_tokens: int = ranged(64, COUNT)
    cov_full_max_tokens: int = ranged(160, COUNT)

    # --- Algorithm 1 (paper; agents/cruise/stages/s9_finalize.py) ------------------------------
    # How Algorithm 1 counts a check that a preset switched off. False (ours, the default): as
    # passed, so an ablation removes that check's veto. True: as failed, the other reading of the
    # paper's Table 1 (docs/chain.md, "Presets").
    disabled_check_fails: bool = False
    tau_ret: float = ranged(0.5, THRESHOLD)  # paper leaves it open; ours until calibrated offline
    # Which turns tau_ret gates: "real_time" (the paper: real-time turns only) or "context" (ours:
    # every turn answered from context as well, for a router whose real-time label says little)
    tau_ret_scope: TauRetScope = "real_time"
    # Ours: a turn whose final answer the retrieval rules of Algorithm 1 already decide ("I don't
    # know" from is_real_time, the context and S_ret, all known after reranking) gets no answer,
    # consistency or verify request: its answer would be thrown away. The final answers stay the
    # same; its trace then holds no answer, so `tools.calibrate` cannot replay it under a lower
    # tau_ret: a run meant for calibration sets this false.
    skip_decided_turns: bool = False
    tau_high: float = ranged(1.0, THRESHOLD)  # paper (tau_low, which the peers read too: agents/config/groups.py)
