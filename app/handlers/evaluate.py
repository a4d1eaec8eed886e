"""The Evaluate tab's handlers (app/tabs/evaluate.py): word prediction, the bundled smoke set, STS and
SentEval on the model that answers the session, as tables and Markdown (app.shared.evaluation)."""
from __future__ import annotations

from core.engine import Engine
from core.words import format_table

from ..shared import services as sv
from ..shared.evaluation import (
    senteval_markdown,
    smoke_markdown,
    sts_markdown,
    word_prediction_rows,
)
from .backend import TabHandlers
from .session import Session

PUBLIC_EVALUATE = ("On this public server the Evaluate tab reads only the bundled smoke set (below); STS and "
                   "SentEval need their data on the server: run DefSent Studio on your own machine for them.")


class EvaluateHandlers(TabHandlers):
    """Benchmarks of the session's model; STS and SentEval read data a public server does not hold."""

    def _engines(self, compare: bool, session: Session | None) -> dict[str, Engine]:
        """{name: engine} of the session's model and, if `compare` and it is trained, its untrained twin."""
        active = self.backend.model_for(session)
        engines = {active.spec.name: active.engine}
        if compare and not active.is_base:
            engines["before DefSent training"] = active.untrained()
        return engines

    def evaluate_words(self, size: int, compare: bool, session: Session | None = None,
                       progress: sv.Progress = sv.no_progress) -> list[list]:
        return word_prediction_rows(self._engines(compare, session), int(size), progress)

    def recorded_metrics(self, session: Session | None = None) -> str:
        """The word-prediction metrics stored in the active checkpoint's manifest, as Markdown."""
        active = self.backend.model_for(session)
        rows = {f"{active.spec.name} ({split})": m for split, m in active.engine.manifest.get("metrics", {}).items()
                if isinstance(m, dict) and "mrr" in m}
        if not rows:
            return "The active model records no word-prediction metrics; evaluate it below."
        return "Recorded when the checkpoint was trained:\n\n" + format_table(rows)

    def evaluate_smoke(self, compare: bool, session: Session | None = None,
                       progress: sv.Progress = sv.no_progress) -> str:
        """The bundled smoke set (app.shared.evaluation.smoke_markdown): works offline and in public mode."""
        return smoke_markdown(self._engines(compare, session), progress)

    def evaluate_sts(self, data_dir: str, datasets: list[str], session: Session | None = None,
                     progress: sv.Progress = sv.no_progress) -> str:
        if self.backend.public is not None:
            raise ValueError(PUBLIC_EVALUATE)
        active = self.backend.model_for(session)
        return sts_markdown(active.engine, active.spec.name, data_dir, list(datasets or []), progress)

    def evaluate_senteval(self, data_dir: str, tasks: list[str], size: str, session: Session | None = None,
                          progress: sv.Progress = sv.no_progress) -> str:
        """SentEval transfer accuracies of the active model beside the papers' (see senteval_markdown)."""
        if self.backend.public is not None:
            raise ValueError(PUBLIC_EVALUATE)
        active = self.backend.model_for(session)
        return senteval_markdown(active.engine, active.spec.name, data_dir, list(tasks or []), size, progress)
