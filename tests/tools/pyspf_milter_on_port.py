"""Runs Debian's pyspf-milter with its DNS lookups sent to a resolver on a loopback port.

Used by tests/mail_e2e only: the SPF milter resolves through /etc/resolv.conf (port 53 of the
machine's resolver), and the end-to-end test serves its test domains from its own dnsmasq on a
free loopback port instead, so it never touches the machine's DNS.

usage: /usr/bin/python3 pyspf_milter_on_port.py DNS_PORT CONFIG_FILE
"""

import sys

import dns.resolver

resolver = dns.resolver.Resolver(configure=False)
resolver.nameservers = ["127.0.0.1"]
resolver.port = int(sys.argv.pop(1))
dns.resolver.default_resolver = resolver

from spf_engine.milter_spf import main  # noqa: E402 (after the resolver is in place)

sys.exit(main())
