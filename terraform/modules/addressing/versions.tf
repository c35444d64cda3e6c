terraform {
  # Provider-free on purpose: `terraform test` runs it offline.
  required_version = ">= 1.7.0"
}
