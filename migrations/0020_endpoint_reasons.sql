-- Why an endpoint is `down` or `invalid`: a bounded code (`domain::endpoint::EndpointReason`),
-- null while it is `unchecked` or `live`. Never another server's error text, and the same code
-- for an address that was refused, one that did not resolve and one that is not public.
ALTER TABLE endpoints ADD COLUMN reason TEXT CHECK (reason IN ('timeout', 'unreachable', 'tls',
    'http_status', 'redirect', 'not_a2a_card', 'mcp_handshake', 'too_large'));
