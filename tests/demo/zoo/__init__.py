"""A tiny zoo-management library whose tests pollute each other."""
