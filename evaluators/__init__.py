"""Turn (problem, candidate source, device) into a measured, trustworthy EvalResult."""
