output "repository_url" {
  description = "The repository's URL (<account>.dkr.ecr.<region>.amazonaws.com/<name>)."
  value       = aws_ecr_repository.this.repository_url
}

output "registry_host" {
  description = "The registry host: researchers.registry in the spec, or LAB_REGISTRY for `lab`."
  value       = split("/", aws_ecr_repository.this.repository_url)[0]
}
