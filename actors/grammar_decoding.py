"""Per-row grammar masks, per-row sampling and per-row stopping inside `model.generate`.

`transformers.generate` runs one decoding loop for a whole padded batch, but our rows differ:
each has its own answer grammar, temperature, seed and `max_tokens`. `RowControl` holds that
per-row state and plugs into `generate` twice: as a logits processor (mask the row's logits
with its xgrammar matcher, then draw the row's token from its own seeded generator) and as a
stopping criterion (feed each new token to the row's matcher and stop the row as soon as the
matcher is terminated, at EOS, or at `max_tokens`). Going through `generate` rather than a
hand-written loop keeps each model's own input preparation (positions under left padding,
image features, multimodal RoPE) exactly as its authors wrote it.

Imports torch, transformers and xgrammar at module level: load it from an actor's `__init__`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import torch
import transformers
import xgrammar as xgr


class GrammarCache:
    """Compiles each distinct grammar string once for one tokenizer."""

    def __init__(
        self,
        tokenizer: transformers.PreTrainedTokenizerBase,
        vocab_size: int,
        stop_token_ids: Sequence[int],
    ):
        self.vocab_size = vocab_size
        info = xgr.TokenizerInfo.from_huggingface(
            tokenizer, vocab_size=vocab_size, stop_token_ids=list(stop_token_ids) or None
        )
        # One compile thread: the engine runs one row batch at a time on a shared CPU.
        self._compiler = xgr.GrammarCompiler(info, max_threads=1)
        self._compiled: dict[str, xgr.CompiledGrammar] = {}

    def __len__(self) -> int:
        return len(self._compiled)

    def get(self, grammar: str) -> xgr.CompiledGrammar:
        """The compiled grammar; a grammar xgrammar cannot read raises its error here."""
        compiled = self._compiled.get(grammar)
        if compiled is None:
            compiled = self._compiler.compile_grammar(grammar)
            self._compiled[grammar] = compiled
        return compiled


@dataclass
class RowSpec:
    """What decoding needs to know about one row."""

    max_tokens: int
    temperature: float = 0.0
    top_p: float = 1.0
    seed: int | None = None
    grammar: xgr.CompiledGrammar | None = None


@dataclass
class RowState:
    """One row's progress: its generated token ids and why it stopped."""

    spec: RowSpec
    matcher: xgr.GrammarMatcher | None
    generator: torch.Generator | None
    tokens: list[int] = field(default_factory=list)
    done: bool = False
    error: str | None = None


class RowControl:
    """Per-row grammar, sampling and stopping state for one `generate` call."""

    def __init__(
        self,
        specs: Sequence[RowSpec],
        vocab_size: int,
        eos_token_ids: Sequence[int],
        device: torch.device,
    ):
        self.vocab_size = vocab_size
        self.eos_token_ids = frozenset(eos_token_ids)
        self.rows = [self._row_state(spec, device) for spec in specs]
        self._bitmask = xgr.allocate_token_bitmask(len(specs), vocab_size)

    @staticmethod
    def _row_state(spec: RowSpec, device: torch.device) -> RowState:
        matcher = None
        if spec.grammar is not None:
            # Bounded grammars end on their own: stop when the text is complete, so the row
            # does not depend on a random or weak model choosing EOS.
            matcher = xgr.GrammarMatcher(spec.grammar, terminate_without_stop_token=True)
        generator = None
        if spec.temperature > 0:
            generator = torch.Generator(device=device)
            generator.manual_seed(spec.seed if spec.seed is not None else 0)
        return RowState(spec, matcher, generator)

    def process_logits(self, scores: torch.Tensor) -> torch.Tensor:
        """Mask each live row's logits by its grammar; make sampled rows' draws the argmax."""
        masked = []
        for i, row in enumerate(self.rows):
            if not row.done and row.matcher is not None:
                row.matcher.fill_next_token_bitmask(self._bitmask, i)
                masked.append(i)
        if masked:
            xgr.apply_token_bitmask_inplace(
                scores, self._bitmask.to(scores.device), vocab_size=self.vocab_size, indices=masked
            )
        for i, row in enumerate(self.rows):
            if not row.done and row.generator is not None:
                token = self._sample(scores[i], row)
                scores[i].fill_(float("-inf"))
                scores[i, token] = 0.0
        return scores

    @staticmethod
    def _sample(logits: torch.Tensor, row: RowState) -> int:
        """Draw from the row's own generator so a row's output depends only on its seed."""
        probs = torch.softmax(logits.float() / row.spec.temperature, dim=-1)
        if row.spec.top_p < 1.0:
            sorted_probs, order = torch.sort(probs, descending=True)
            # Keep the smallest prefix whose mass reaches top_p (always at least one token).
            outside = torch.cumsum(sorted_probs, dim=-1) - sorted_probs >= row.spec.top_p
            sorted_probs[outside] = 0.0
            probs = torch.zeros_like(probs).scatter_(0, order, sorted_probs)
        return int(torch.multinomial(probs, 1, generator=row.generator).item())

    def accept(self, new_tokens: torch.Tensor) -> torch.Tensor:
        """Feed the step's tokens to the live rows; return which rows are done (bool, [B])."""
        for row, token in zip(self.rows, new_tokens.tolist(), strict=True):
            if row.done:
                continue  # generate keeps stepping finished rows; their tokens are padding
            row.tokens.append(token)
            if row.matcher is not None:
                if not row.matcher.accept_token(token):
                    row.error = f"grammar rejected token {token} after {len(row.tokens) - 1} tokens"
                    row.done = True
                elif row.matcher.is_terminated():
                    row.done = True
            elif token in self.eos_token_ids:
                row.done = True
            if len(row.tokens) >= row.spec.max_tokens:
                row.done = True
        return torch.tensor([row.done for row in self.rows], device=new_tokens.device)

    def text_tokens(self, i: int) -> list[int]:
        """Row i's generated ids without a trailing EOS (which is not part of the answer)."""
        tokens = self.rows[i].tokens
        if tokens and tokens[-1] in self.eos_token_ids:
            return tokens[:-1]
        return tokens

    def logits_processor(self) -> transformers.LogitsProcessorList:
        """The processor that masks tokens the rows' grammars forbid, for `generate`."""
        return transformers.LogitsProcessorList([_Processor(self)])

    def stopping_criteria(self) -> transformers.StoppingCriteriaList:
        """The criterion that stops `generate` once every row's grammar has ended."""
        return transformers.StoppingCriteriaList([_Criteria(self)])


class _Processor(transformers.LogitsProcessor):
    def __init__(self, control: RowControl):
        self.control = control

    def __call__(self, input_ids: torch.LongTensor, scores: torch.FloatTensor) -> torch.Tensor:
        return self.control.process_logits(scores)


class _Criteria(transformers.StoppingCriteria):
    def __init__(self, control: RowControl):
        self.control = control

    def __call__(
        self, input_ids: torch.LongTensor, scores: torch.FloatTensor, **kwargs: object
    ) -> torch.Tensor:
        return self.control.accept(input_ids[:, -1])
