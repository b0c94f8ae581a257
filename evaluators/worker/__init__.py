"""What runs inside the worker processes: the candidate's (untrusted) and the reference's; imports nothing of judge."""
