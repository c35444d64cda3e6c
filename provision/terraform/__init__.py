"""Terraform for the cluster: render one root per region plus a global root from the spec, run them, and
bootstrap the state bucket. The modules themselves live in ``terraform/modules``."""
