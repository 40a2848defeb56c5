"""The hunt for latent order-dependent tests: plan, runs, proofs."""
