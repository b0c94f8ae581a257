"""The four LLM roles (selector, hypothesizer, implementer, debugger), their prompts, schemas and models.

The agents/graph contract (each module's docstring has the detail):

- Role functions, each returning `(result, LLMCall)`; prompts are `agents/prompts/<name>.md` (string.Template):
  `selector.select_parent(model, *, archive_summary, candidate_ids, call_id, best_id=None, lines=None, shapes=None,
  findings=...) -> Selection` (falls back to the best with `LLMCall.fell_back=True` when answers stay malformed; a
  claimed contrast is checked against `lines` / `shapes`);
  `hypothesizer.propose_avenues(model, *, problem, base, findings, profile, passages, n_avenues, call_id,
  reference=None, selection=None, target=None) -> Avenues` (lesson, avenues), `hypothesizer.propose_plans(model, *,
  problem, base, avenues, findings, profile, passages, n_plans, call_id, lesson=None, reference=None,
  selection=None, target=None) -> list[Plan]`, `hypothesizer.retrieval_queries(problem, base, target)`;
  `choice.choose_plans(plans, n)` (the paper's rule, deterministic); `implementer.implement_plan(model, *, problem,
  base_source, reference_source, plan, siblings, call_id) -> str`; `debugger.debug_candidate(model, *, problem,
  source, diagnostics, status, plan, siblings, profile, call_id, base_source="", attempts=None) -> str`.
  All take an optional `policy: RetryPolicy`. A malformed, empty or cut-off answer is shown what was wrong and
  asked again (follow-up call ids f"{call_id}.r{n}"); the designer, implementer and debugger then raise
  `MalformedAnswer` (its `.call` holds the accounting). Transport failures are retried in `agents.retry`;
  authentication, bad requests and unclassified errors raise `FatalLLMError`.
- `briefs.ProblemBrief`, `briefs.CandidateBrief` (`.from_record`); `schemas.Selection`, `Avenue`, `Plan`, `Anchor`,
  `ChosenPlan`; `accounting.LLMCall`, `cost_of`, `totals_by_role`; `errors.FatalLLMError`, `MalformedAnswer`.
- `notebook.archive_summary`, `notebook_summary`, `selectable_ids`: bounded views of `kernels.archive.Archive`;
  `population` (lines of descent, per-shape leaders, diversity); `findings.finding_for` (deterministic findings);
  `anchors` (grounded edits: format, markers, the diff check); `siblings.sibling_digest` (dynamic context).
- `models.make_chat_model(spec, *, role, temperature=None, record_to=None)`, `ModelSettings`,
  `parse_role_overrides`; `cassette.ReplayChatModel`, `RecordingChatModel`; `transcript.TranscriptChatModel`.
- `targets.Target`, `get_target(name)`, `for_device(name)`: the architecture the kernels are for.
- Speedups in prompts are written by `kernels.speedup.format_speedup` (three significant figures).
- `parsing` (reading replies), `replies` (stop reasons), `errors.CutOff` (a reply cut off before its end).
"""
