# frozen_string_literal: true

# The cluster's private zone from the site: systemd-resolved forwards the cluster domain (routing-only domain
# ~<domain>) to the Route 53 Resolver inbound endpoint; every other name keeps the site's own resolvers.
dns = node['cluster_node']['dns']

directory '/etc/systemd/resolved.conf.d' do
  mode '0755'
end

template "/etc/systemd/resolved.conf.d/#{node['cluster_node']['cluster']}.conf" do
  source 'resolved-cluster.conf.erb'
  mode '0644'
  notifies :restart, 'service[systemd-resolved]', :immediately
end

service 'systemd-resolved' do
  action %i(enable start)
end

ruby_block "resolve api.#{dns['domain']}" do
  block do
    name = "api.#{dns['domain']}"
    resolved = Mixlib::ShellOut.new('resolvectl', 'query', '--legend=no', name).run_command
    Chef::Log.warn("#{name} does not resolve yet (is the VPN up?): #{resolved.stderr.strip}") if resolved.error?
  end
end
