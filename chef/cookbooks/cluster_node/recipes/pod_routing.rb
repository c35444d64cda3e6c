# frozen_string_literal: true

# The pod network for the site's machines that are not nodes (workstations, the NAS): they send the pod CIDR to
# this gateway (the site's router, or their default route, points it here: docs/terraform.md, "How a site
# joins"). The gateway is a flannel member (recipe kubernetes_join, tainted), so its kernel has flannel's route
# to every node's pod subnet; it masquerades what those machines send into the pod network (nftables table
# ip cluster_pod_routing) so the pods answer to its own overlay address, back through flannel, wherever they
# run: a cloud node would drop a reply addressed to the site straight from a pod address (the source/destination
# check of its ENI), as terraform/modules/pod_gateway explains for the VPC side. flannel started with --ip-masq
# (the upstream manifest's default) adds the same translation ("masquerade anything headed towards flannel from
# the host", flannel's masquerade rules); this table keeps the gateway's routing independent of that flag, as
# the VPC gateways' own rule does.
package 'nftables'

template '/etc/nftables.d/cluster-pod-routing.nft' do
  source 'pod-routing.nft.erb'
  mode '0644'
  verify '/usr/sbin/nft -c -f %{path}' # rubocop:disable Style/FormatStringToken (Chef's own placeholder)
  notifies :restart, 'service[cluster-pod-routing]', :delayed
end

systemd_unit 'cluster-pod-routing.service' do
  content <<~UNIT
    [Unit]
    Description=Masquerade the site's traffic into the pod network
    After=network-online.target

    [Service]
    Type=oneshot
    RemainAfterExit=yes
    ExecStart=/usr/sbin/nft -f /etc/nftables.d/cluster-pod-routing.nft
    ExecStop=/usr/sbin/nft delete table ip cluster_pod_routing

    [Install]
    WantedBy=multi-user.target
  UNIT
  action %i(create enable)
end

service 'cluster-pod-routing' do
  action :start
end
