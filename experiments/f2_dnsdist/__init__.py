"""F2 (seed 001): dnsdist answering REFUSED to a random-subdomain flood, one listener against one
reusePort listener per core with big socket buffers and recvmmsg. The experiment
(`dnsdist-listeners`), its procedure, claims, plots and fixtures are this package.
"""
