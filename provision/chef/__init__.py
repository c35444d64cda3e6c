"""Chef node attributes for the physical servers, generated from the spec and the Terraform outputs."""
