"""The trusted parent: static checks, worker processes and their channel, memory of references, verdicts and flags."""
