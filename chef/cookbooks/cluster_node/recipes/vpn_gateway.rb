# frozen_string_literal: true

# The site's IPsec gateway, route-based: per AWS tunnel an XFRM interface (cluster-xfrm-interfaces.service) that
# strongSwan (charon-systemd, swanctl) binds the tunnel's SAs to by if_id, with exactly the IKE/ESP proposals of
# the Terraform VPN module; BGP over the tunnels (recipe bgp) and TCP MSS clamping (recipe mss_clamp).
# Keys are read from SSM at converge time.
vpn = node['cluster_node']['vpn']
conf_dir = node['cluster_node']['swanctl_dir']
cluster = node['cluster_node']['cluster']

package %w(charon-systemd strongswan-swanctl)

sysctl 'net.ipv4.ip_forward' do
  value 1
end

# Either tunnel of a region may carry a flow's return traffic: loose reverse-path filtering (RFC 3704).
%w(all default).each do |scope|
  sysctl "net.ipv4.conf.#{scope}.rp_filter" do
    value 2
  end
end

template '/usr/local/sbin/cluster-xfrm-interfaces' do
  source 'xfrm-interfaces.sh.erb'
  mode '0755'
  notifies :restart, 'service[cluster-xfrm-interfaces]', :immediately
end

systemd_unit 'cluster-xfrm-interfaces.service' do
  content <<~UNIT
    [Unit]
    Description=XFRM interfaces of the AWS site-to-site tunnels
    After=network-online.target
    Wants=network-online.target
    Before=strongswan.service bird.service

    [Service]
    Type=oneshot
    RemainAfterExit=yes
    ExecStart=/usr/local/sbin/cluster-xfrm-interfaces

    [Install]
    WantedBy=multi-user.target
  UNIT
  action %i(create enable)
end

service 'cluster-xfrm-interfaces' do
  action :start
end

template '/etc/strongswan.d/charon-cluster.conf' do
  source 'strongswan-cluster.conf.erb'
  mode '0644'
  notifies :restart, 'service[strongswan]', :delayed
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

include_recipe 'cluster_node::bgp'
include_recipe 'cluster_node::mss_clamp'
include_recipe 'cluster_node::pod_routing'
