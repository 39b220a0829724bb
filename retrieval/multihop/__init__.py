"""Multi-hop retrieval: judges that say what is missing, and hops that fetch it (over a protocol)."""
