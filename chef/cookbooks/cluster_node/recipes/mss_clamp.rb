# frozen_string_literal: true

# TCP MSS clamping on the tunnel interfaces (nftables table inet cluster_vpn_mss), loaded at boot after the
# XFRM interfaces and whenever the template changes; `nft -c` checks it first.
package 'nftables'

template '/etc/nftables.d/cluster-vpn-mss.nft' do
  source 'mss-clamp.nft.erb'
  mode '0644'
  verify '/usr/sbin/nft -c -f %{path}' # rubocop:disable Style/FormatStringToken (Chef's own placeholder)
  notifies :restart, 'service[cluster-vpn-mss]', :delayed
end

systemd_unit 'cluster-vpn-mss.service' do
  content <<~UNIT
    [Unit]
    Description=TCP MSS clamping on the AWS site-to-site tunnels
    After=cluster-xfrm-interfaces.service

    [Service]
    Type=oneshot
    RemainAfterExit=yes
    ExecStart=/usr/sbin/nft -f /etc/nftables.d/cluster-vpn-mss.nft
    ExecStop=/usr/sbin/nft delete table inet cluster_vpn_mss

    [Install]
    WantedBy=multi-user.target
  UNIT
  action %i(create enable)
end

service 'cluster-vpn-mss' do
  action :start
end
