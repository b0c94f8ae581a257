"""The LangGraph state machine of the scientist: state, nodes, edges, the run CLI and its report."""
