"""Procedures an experiment file of a user's own may name (`procedure:
compare.servers_by_transport`), their defaults (`<module>.yaml`) and the plots they draw:
shared, in no finding's package, judged by no claim."""
