# frozen_string_literal: true

# AWS credentials for this server without long-lived keys (IAM Roles Anywhere): aws_signing_helper signs with the
# server's certificate (the sites' CA, OU = site) and returns one-hour role credentials to the AWS CLI through
# credential_process. The certificate and key are placed by the site's administrator (docs/terraform.md,
# "How a site joins"); the key never leaves the server.
pki = node['cluster_node']['site_pki_dir']
helper = node['cluster_node']['signing_helper']

%w(server.crt server.key).each do |file|
  next if ::File.exist?(::File.join(pki, file))

  raise "cluster_node: #{::File.join(pki, file)} is missing: issue this server's certificate from the sites' CA " \
        "(OU=#{node['cluster_node']['site']}, CN=#{cluster_server_name}) before converging"
end

file ::File.join(pki, 'server.key') do
  mode '0600'
  owner 'root'
end

if node['cluster_node']['signing_helper_sha256']
  remote_file helper do
    source node['cluster_node']['signing_helper_url']
    checksum node['cluster_node']['signing_helper_sha256']
    mode '0755'
  end
elsif !::File.executable?(helper)
  raise "cluster_node: #{helper} is missing; install aws_signing_helper or set signing_helper_url and " \
        'signing_helper_sha256 (the checksum AWS publishes for that release)'
end

directory ::File.dirname(node['cluster_node']['aws_config']) do
  mode '0755'
end

template node['cluster_node']['aws_config'] do
  source 'aws-config.erb'
  mode '0644'
end

# Every AWS CLI call of this converge (SSM reads of the join token and the tunnel keys) uses this profile.
ENV['AWS_CONFIG_FILE'] = node['cluster_node']['aws_config']
ENV['AWS_PROFILE'] = node['cluster_node']['aws_profile']
