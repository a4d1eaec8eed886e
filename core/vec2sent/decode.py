"""Turn sentence vectors into compact token ids: greedy decoding and beam search, batched.

Both stop a sentence at [EOS] and every sentence after `max_length` pieces. Beam search with
width 1 gives exactly the greedy result. Both stop with core.runtime.cancel.Cancelled at their next step once
their work was cancelled.
"""
from __future__ import annotations

import torch
from torch.nn import functional as F

from core.runtime.cancel import check_cancelled
from core.vec2sent.model import State, Vec2SentDecoder
from core.vec2sent.vocab import BOS, EOS, PAD

# The length normalisation of beam search: a hypothesis scores log-prob / length**LENGTH_ALPHA.
LENGTH_ALPHA = 0.6


def _next_log_probs(model: Vec2SentDecoder, tokens: torch.Tensor, x: torch.Tensor,
                    state: State | None) -> tuple[torch.Tensor, State]:
    """Log-probabilities (B, V) of the next piece after tokens (B, 1); [PAD]/[BOS] never come next."""
    logits, state = model.step(tokens, x, state)
    logits = logits[:, -1].float()  # (B, V)
    logits[:, [PAD, BOS]] = float("-inf")
    return F.log_softmax(logits, dim=-1), state


def _check_eval_mode(model: Vec2SentDecoder) -> None:
    # Decoding never switches modes (another thread may be decoding with the same model).
    if model.training:
        raise RuntimeError("decoding needs eval mode (dropout off): call model.eval() first")


def _until_eos(ids: torch.Tensor) -> list[int]:
    out = []
    for i in ids.tolist():
        if i in (EOS, PAD):
            break
        out.append(i)
    return out


@torch.no_grad()
def greedy_decode(model: Vec2SentDecoder, sentences: torch.Tensor, max_length: int) -> list[list[int]]:
    """Most likely piece at every step, for sentence vectors (B, S); [EOS] excluded from the output."""
    _check_eval_mode(model)
    x, state = model.start(sentences)
    tokens = torch.full((x.shape[0], 1), BOS, dtype=torch.long, device=x.device)  # (B, 1)
    done = torch.zeros(x.shape[0], dtype=torch.bool, device=x.device)  # (B,)
    generated = []
    for _ in range(max_length):
        check_cancelled()
        log_probs, state = _next_log_probs(model, tokens, x, state)
        tokens = log_probs.argmax(-1, keepdim=True)  # (B, 1)
        generated.append(tokens)
        done |= tokens[:, 0] == EOS
        if done.all():
            break
    return [_until_eos(row) for row in torch.cat(generated, dim=1).cpu()]


def beam_search(model: Vec2SentDecoder, sentences: torch.Tensor, width: int = 4, alpha: float = LENGTH_ALPHA,
                max_length: int = 48) -> list[list[int]]:
    """Best hypothesis per sentence vector (B, S) under log-prob / length**alpha."""
    return [hypotheses[0] for hypotheses in beam_search_nbest(model, sentences, width, alpha, max_length)]


@torch.no_grad()
def beam_search_nbest(model: Vec2SentDecoder, sentences: torch.Tensor, width: int = 4, alpha: float = LENGTH_ALPHA,
                      max_length: int = 48) -> list[list[list[int]]]:
    """The `width` hypotheses of the final beam per sentence vector (B, S), best first under
    log-prob / length**alpha (duplicates possible when fewer distinct ones survive).

    Finished hypotheses stay in the beam (continued by [PAD] at no cost) and compete with live ones
    on the length-normalised score, so a short early [EOS] is not favoured when alpha > 0.
    """
    _check_eval_mode(model)
    batch, vocab = sentences.shape[0], model.config.vocab_size
    x, state = model.start(sentences)
    x = x.repeat_interleave(width, dim=0)  # (B*K, S)
    if state is not None:
        state = tuple(s.repeat_interleave(width, dim=1) for s in state)  # (L, B*K, H)
    on = {"device": x.device}  # every tensor of the search where the model computes
    tokens = torch.full((batch * width, 1), BOS, dtype=torch.long, **on)  # (B*K, 1)
    history = torch.empty((batch, width, 0), dtype=torch.long, **on)  # (B, K, t)
    scores = torch.full((batch, width), float("-inf"), **on)  # (B, K); only beam 0 is live at first
    scores[:, 0] = 0.0
    lengths = torch.zeros((batch, width), **on)  # (B, K) pieces generated, [EOS] included
    finished = torch.zeros((batch, width), dtype=torch.bool, **on)  # (B, K)
    stay_finished = torch.full((vocab,), float("-inf"), **on)  # (V,) a finished hypothesis only adds [PAD]
    stay_finished[PAD] = 0.0
    offsets = torch.arange(batch, **on).unsqueeze(1) * width  # (B, 1) flat index of each sentence's beam 0

    for _ in range(max_length):
        check_cancelled()
        log_probs, state = _next_log_probs(model, tokens, x, state)
        log_probs = log_probs.view(batch, width, vocab)  # (B, K, V)
        log_probs = torch.where(finished.unsqueeze(-1), stay_finished, log_probs)
        candidates = scores.unsqueeze(-1) + log_probs  # (B, K, V)
        new_lengths = lengths + (~finished).float()  # (B, K)
        ranks = candidates / new_lengths.clamp(min=1).unsqueeze(-1) ** alpha  # (B, K, V)
        best = ranks.view(batch, -1).topk(width, dim=1).indices  # (B, K)
        beam, token = best // vocab, best % vocab  # (B, K) each
        scores = candidates.view(batch, -1).gather(1, best)
        lengths = new_lengths.gather(1, beam)
        finished = finished.gather(1, beam) | (token == EOS)
        history = torch.cat([history.gather(1, beam.unsqueeze(-1).expand_as(history)),
                             token.unsqueeze(-1)], dim=2)  # (B, K, t+1)
        rows = (beam + offsets).view(-1)  # (B*K,) which previous row each new beam extends
        state = tuple(s[:, rows] for s in state)
        tokens = token.view(-1, 1)  # (B*K, 1)
        if finished.all():
            break

    order = (scores / lengths.clamp(min=1) ** alpha).argsort(dim=1, descending=True)  # (B, K)
    history, scores = history.cpu(), scores.cpu()
    return [[_until_eos(history[b, k]) for k in order[b].tolist() if scores[b, k] > float("-inf")]
            for b in range(batch)]
