output "credentials" {
  description = "What aws_signing_helper needs on a site server (ARNs only; the certificate and key stay on the server)."
  value = {
    trust_anchor_arn = aws_rolesanywhere_trust_anchor.sites.arn
    profile_arn      = aws_rolesanywhere_profile.sites.arn
    role_arn         = aws_iam_role.site.arn
  }
}
