"""The four LLM roles (selector, hypothesizer, implementer, debugger), their prompts, schemas and models.

The agents/graph contract (each module's docstring has the detail):

- Role functions, each returning `(result, LLMCall)`; prompts are `agents/prompts/<role>.md` (string.Template):
  `selector.select_parent(model, *, archive_summary, candidate_ids, call_id, best_id=None) -> Selection`
  (falls back to the best with `LLMCall.fell_back=True` when answers stay malformed);
  `hypothesizer.propose_experiments(model, *, problem, base, notebook, passages, n_experiments, n_chosen,
  call_id) -> HypothesisSet` and `hypothesizer.retrieval_queries(problem, base) -> list[str]`;
  `implementer.implement_experiment(model, *, problem, base_source, reference_source, experiment, call_id)
  -> str`; `debugger.debug_candidate(model, *, problem, source, diagnostics, status, call_id) -> str`.
  All take an optional `policy: RetryPolicy`. A malformed answer is shown its error and asked again (follow-up
  call ids f"{call_id}.r{n}"); the hypothesizer, implementer and debugger then raise `MalformedAnswer`
  (its `.call` holds the accounting). Transport failures are retried in `agents.retry`; authentication and
  bad requests raise `FatalLLMError`.
- `briefs.ProblemBrief`, `briefs.CandidateBrief` (`.from_record`); `schemas.Selection`, `Experiment`,
  `HypothesisSet`; `accounting.LLMCall`, `cost_of`, `totals_by_role`; `errors.FatalLLMError`, `MalformedAnswer`.
- `notebook.archive_summary`, `notebook_summary`, `selectable_ids`: bounded views of `kernels.archive.Archive`.
- `models.make_chat_model(spec, *, role, temperature=None, record_to=None)`, `ModelSettings`,
  `parse_role_overrides`; `cassette.ReplayChatModel`, `RecordingChatModel`.
"""
