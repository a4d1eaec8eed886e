"""The Analogy & interpolation tab's handlers (app/tabs/analogy.py): b - a + c and the path between two
sentences, decoded by Vec2Sent, with the nearest reference sentences."""
from __future__ import annotations

from core.readout import describe_borrowed
from core.vec2sent import API_DEFAULT, PATH_DEFAULT, sentence_names

from ..shared import services as sv
from ..views import render
from .backend import TabHandlers
from .session import Session

REFINED_STEPS = ("Refine takes about 2 seconds a step; this public server refines at most {limit} steps of an "
                 "interpolation, not {steps}: use fewer steps or turn Refine off.")
_NO_DECODER = ("No Vec2Sent decoder is available for the active encoder (none in checkpoints/ was trained on "
               "its fingerprint {fp}), so no sentence is decoded.")
_TRAIN_ONE = " Train one with `python -m core vec2sent-train`."
NO_DECODER_SHORT = _NO_DECODER + _TRAIN_ONE  # the Decode box: nothing else is read off the vector
NO_DECODER = (_NO_DECODER + " The top words and the nearest reference sentences below are read off the vector "
              "directly." + _TRAIN_ONE)

SENTENCE_NAMES = ("a", "b", "c")  # the analogy's text boxes, as an expression names them
FIT = "fit {fit:.3f}: the cosine between this sentence's vector and the one it was read from (1 = the encoder sees no difference)"

EDITED = "*This sentence is c changed as a became b (its words or its structure), not a decoding; "
AGREES = EDITED + "the vector agrees: it fits b - a + c (cosine {fit:.3f}) at least as well as the decoder's own best reading ({best:.3f}).*"
CLOSE = (EDITED + "it fits b - a + c with cosine {fit:.3f}, less than the decoder's own best reading ({best:.3f}), "
         "and is shown because it changes c as a was changed into b.*")


def edited_note(fit: float, best: float) -> str:
    """What the Analogy tab says under an edit transfer that fits its vector with cosine `fit`, where the decoder's
    own best reading fits it with `best`: "the vector agrees" only when it fits at least as well (issue 76, 3)."""
    return (AGREES if fit >= best else CLOSE).format(fit=fit, best=best)


class AnalogyHandlers(TabHandlers):
    """Arithmetic on sentence vectors, read back as sentences, words and nearest texts."""

    def analogy(self, a: str, b: str, c: str, expression: str, refine: bool = False,
                reference: str = sv.LARGEST_READY, session: Session | None = None,
                progress: sv.Progress = sv.no_progress) -> tuple[str, list[list], list[list]]:
        """(decoded sentence or why there is none, top-word rows, rows of the nearest texts of
        `reference`, one of sv.REFERENCE_CHOICES or sv.UPLOADED_FILE: see Session.reference); `refine`:
        decode with the most exact setting (more correction rounds: `DecodeSettings.app`, core/vec2sent/reading.py)."""
        used = sentence_names(expression, SENTENCE_NAMES)  # only these need a text: "a" alone decodes a
        sentences = {name: sv.check_text(text, f"sentence {name}") if name in used else ""
                     for name, text in zip(SENTENCE_NAMES, (a, b, c))}
        active, session = self.backend.model_for(session), session or Session()
        result = active.engine.analogy(**sentences, reference=self._reference(active, reference, session, progress),
                                       k=10, settings=PATH_DEFAULT.app(exact=refine), expression=expression)
        decoded = (_decoded_line(result.decoded, result.fit) if result.decoded is not None
                   else NO_DECODER.format(fp=active.engine.fingerprint))
        if result.edited:
            decoded += "\n\n" + edited_note(result.fit, result.decoding_fit)
        borrowed = active.engine.borrowed_decoding
        if result.decoded is not None and borrowed:
            decoded += f"\n\n{describe_borrowed(borrowed)}"
        return (decoded, render.word_score_rows(result.words), render.scored_rows(result.nearest))

    def decode(self, text: str, refine: bool = False, session: Session | None = None) -> str:
        """The sentence the decoder reads back from `text`'s vector (a headline, a tweet, any text) and its fit;
        the app's decode settings (APP, corrected once; `refine`: MOST_EXACT)."""
        text = sv.check_text(text, "a sentence to decode")
        engine = self.backend.model_for(session).engine
        if engine.decoder is None:
            return NO_DECODER_SHORT.format(fp=engine.fingerprint)
        vectors = engine.encode([text])  # (1, d)
        sentence = engine.decode(vectors, API_DEFAULT.app(exact=refine))[0]
        return _decoded_line(sentence, float(engine.similarity(vectors, [sentence])[0, 0]))

    def interpolation(self, a: str, b: str, steps: int, refine: bool = False, reference: str = sv.LARGEST_READY,
                      session: Session | None = None, progress: sv.Progress = sv.no_progress):
        """(table rows per step: alpha, sentence, its cosine to its point and to the two ends, top words,
        the nearest text of `reference`; a line chart of those cosines by step); `refine` and
        `reference` as in `analogy`, for every step."""
        public = self.backend.public
        if not 2 <= int(steps) <= 50:
            raise ValueError("The number of steps must be between 2 and 50.")
        if refine and public is not None and int(steps) > public.refined_interpolation_steps:
            raise ValueError(REFINED_STEPS.format(steps=int(steps), limit=public.refined_interpolation_steps))
        x, y = sv.check_text(a, "the From sentence"), sv.check_text(b, "the To sentence")
        active, session = self.backend.model_for(session), session or Session()
        reference = self._reference(active, reference, session, progress)
        points = active.engine.interpolate(x, y, int(steps), reference=reference, k=3,
                                          settings=PATH_DEFAULT.app(exact=refine))
        rows = [[round(p.alpha, 3), p.decoded or "(no decoder)", *(_rounded(c) for c in (p.fit, p.decoded_cos_x, p.decoded_cos_y)),
                 render.word_list(p.words), p.nearest[0][0] if p.nearest else ""] for p in points]
        return rows, render.path_chart(points)

    def _reference(self, active, choice: str, session: Session, progress: sv.Progress):
        """`Session.reference`; the uploaded file's vectors used, counted as such (`HeldVectors`: they go last)."""
        reference = session.reference(active, choice, progress)
        if choice == sv.UPLOADED_FILE:
            self.backend.held_vectors.used(session)
        return reference


def _decoded_line(sentence: str, fit: float | None) -> str:
    """The decoded sentence and how well it fits the vector it was read from (as the interpolation's "fit")."""
    return f"**Decoded:** {sentence}" + ("" if fit is None else f"  \n{FIT.format(fit=fit)}")


def _rounded(value: float | None) -> float | None:
    return None if value is None else round(value, 3)
