"""The LangGraph state machine of the scientist: state, nodes, edges, the run CLI and its report.

Shape (graph.builder.build_graph; `graph` there is the Studio graph, compiled without a checkpointer):

    START -> setup -> selector -> hypothesizer -> experiment x N (Send, in parallel) -> record -> selector | report
    experiment (a subgraph per slot): implementer -> evaluate -> debugger -> evaluate ... -> recheck? -> control? -> END
    setup -> report when no iteration is allowed; hypothesizer -> record when its answer stays malformed

- evaluate routes compile_error / runtime_error / incorrect / timeout to the debugger while its attempts are below
  `max_debug_attempts`, then ends the experiment; a correct candidate ends it at once (graph.routing), unless it is
  due a strict re-evaluation (recheck: clearable flags, a gain to confirm) and then a control (the reference judged
  as itself, for a gain the two runs still show: graph.quarantine).
- record archives the iteration's candidates (kernels/archive.py, `<run_dir>/archive.jsonl`, idempotent on
  resume) and goes back to the selector while every budget has room (iterations, tokens, dollars, wall time).
- Settings are the context schema `graph.context.RunContext` (Studio shows them as a form); parallelism is the
  run config's `max_concurrency`; with several GPUs, slot k evaluates on cuda:(k mod count).
- Strategies (`RunContext.strategy`, graph.strategies): scientist, sampling (no selector or designer), tree (the
  epsilon-greedy rule instead of the selector). Designs and findings go to `kernels.labbook.LabBook` beside the
  archive; a run stops early once its best reaches `speed_of_light` of its roofline.
- LLM call ids: f"i{iteration}.selector", f"i{iteration}.hypothesizer.avenues", f"i{iteration}.hypothesizer.plans",
  f"i{iteration}.s{slot}.implementer.a0",
  f"i{iteration}.s{slot}.debugger.a{attempt}" (attempt from 1), so cassettes replay parallel slots exactly; every
  call is written to `<run_dir>/transcript.jsonl` (graph.lab.model_settings).
- The target (`RunContext.target`, `--target`; else the device that evaluates, graph.lab.run_target) reaches the
  designer's retrieval and prompts and the report.
- `python -m graph.run` (graph.run): runs or resumes (`--resume RUN_ID`) a run under runs/<run_id>, with a
  SqliteSaver at `<run_dir>/checkpoints.sqlite` (thread id = run id) and settings in `<run_dir>/run.json`;
  writes best_kernel.py, summary.json, speedup.svg and report.md (graph.report). Exit 0 done, 2 bad usage (every
  argument that can be checked before work is: graph.preflight), 3 fatal LLM error (FatalLLMError: the archive and
  checkpoints are kept), 4 an evaluation the machinery lost, 130 interrupted (Ctrl-C or SIGTERM: graph.stopping,
  experiments end before their next node). A resume after any
  of these, or after kill -9, finishes the run with the candidates an uninterrupted run has
  (tests/graph/test_crash_consistency.py).
"""
