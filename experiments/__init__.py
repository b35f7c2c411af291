"""Experiments: the declarative experiment files (`<name>.yaml`), the sysctl profiles
(`profiles/`), the procedures that run them (`procedures/`), and the load protocols
(`load`) and client-cache model (`cache_model`) they use."""
