output "issuer_url" {
  description = "The service-account issuer (kube-apiserver --service-account-issuer)."
  value       = "https://${local.issuer}"
}

output "bucket" {
  description = "Where `invoke publish-oidc` writes the discovery document and the JWKS."
  value       = aws_s3_bucket.issuer.bucket
}

output "provider_arn" {
  description = "The IAM OIDC provider."
  value       = aws_iam_openid_connect_provider.cluster.arn
}

output "role_arns" {
  description = "Researcher => role their namespace's default ServiceAccount assumes (annotation eks.amazonaws.com/role-arn)."
  value       = { for k, r in aws_iam_role.researcher : k => r.arn }
}

output "issuer" {
  description = "The issuer without https://: the prefix of its IAM condition keys (<issuer>:sub, <issuer>:aud)."
  value       = local.issuer
}
