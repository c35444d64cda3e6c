# frozen_string_literal: true

# The site's IPsec gateway: strongSwan (charon-systemd, configured with swanctl) to both AWS tunnels of every
# region, with exactly the IKE/ESP proposals of the Terraform VPN module. Keys are read from SSM at converge time.
vpn = node['cluster_node']['vpn']
conf_dir = node['cluster_node']['swanctl_dir']
cluster = node['cluster_node']['cluster']

package %w(charon-systemd strongswan-swanctl)

sysctl 'net.ipv4.ip_forward' do
  value 1
end

execute 'swanctl --load-all' do
  action :nothing
end

template ::File.join(conf_dir, "#{cluster}-aws.conf") do
  source 'swanctl.conf.erb'
  owner 'root'
  group 'root'
  mode '0640'
  notifies :run, 'execute[swanctl --load-all]', :delayed
end

cluster_node_vpn_secrets ::File.join(conf_dir, "#{cluster}-aws-secrets.conf") do
  tunnels vpn['tunnels'].map(&:to_h)
  notifies :run, 'execute[swanctl --load-all]', :delayed
end

service 'strongswan' do
  action %i(enable start)
end
