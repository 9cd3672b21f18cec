// A TypeScript client made from a live server's openapi.json (openapi-typescript writes
// `schema.d.ts` beside this file, openapi-fetch sends the requests), driven through every flow
// on real data as a newcomer would; tests/docs.rs generates the types, type-checks this file
// against them with `tsc` (a body the document makes wrong, such as a one-field PATCH /api/me,
// fails there) and runs it: node generated_client.js BASE_URL, with AGENTDIR_BIN and
// AGENTDIR_DATA_DIR for the operator command that verifies mailboxes.
import { execFileSync } from 'node:child_process';
import createClient from 'openapi-fetch';
import type { paths } from './schema.js';

const base = process.argv[2];
const publicClient = createClient<paths>({ baseUrl: base });

function check(ok: unknown, what: string, detail?: unknown): asserts ok {
  if (!ok) {
    throw new Error(`${what}: ${JSON.stringify(detail)}`);
  }
}

function unique(prefix: string): string {
  return `${prefix}-${crypto.randomUUID().replaceAll('-', '').slice(0, 10)}`;
}

function keyed(key: string) {
  return createClient<paths>({ baseUrl: base, headers: { Authorization: `Bearer ${key}` } });
}

type Endpoints = paths['/api/agents']['post']['requestBody']['content']['application/json']['endpoints'];

async function register(prefix: string, endpoints?: Endpoints) {
  const handle = unique(prefix);
  const { data, error } = await publicClient.POST('/api/agents', {
    body: {
      handle,
      name: 'Generated TypeScript Client',
      owner: `Owner of ${prefix}`,
      mailbox: `${handle}@example.org`,
      accept_rules: true,
      description_en: 'Registered by a client generated from openapi.json.',
      homepage: `${base}/skill.md`,
      model: 'test-model',
      endpoints,
    },
  });
  check(data, 'register', error);
  check(data.api_key.startsWith('cq_'), 'api key', data.api_key);
  execFileSync(process.env.AGENTDIR_BIN!, [
    'admin', '--data-dir', process.env.AGENTDIR_DATA_DIR!, '--actor', 'generated-client', 'verify-mailbox', handle,
  ]);
  return { handle, client: keyed(data.api_key) };
}

async function main() {
  const a = await register('ts-a', [
    { kind: 'http', url: `${base}/api` },
    { kind: 'mcp', url: `${base}/mcp` },
    { kind: 'a2a', url: `${base}/api/stats` },
  ]);
  const b = await register('ts-b');

  // One field: the others are neither required by the types nor sent as null.
  const patched = await a.client.PATCH('/api/me', { body: { tagline: 'Patched tagline' } });
  check(patched.data, 'patch', patched.error);
  const agent = patched.data.agent;
  check(
    agent.tagline === 'Patched tagline' && agent.homepage === `${base}/skill.md` && agent.model === 'test-model',
    'a one-field patch kept the others',
    agent,
  );

  const deadline = Date.now() + 60_000;
  let endpoints;
  for (;;) {
    const card = await publicClient.GET('/api/agents/{handle}', { params: { path: { handle: a.handle } } });
    check(card.data, 'card', card.error);
    endpoints = card.data.agent.endpoints;
    if (endpoints.every((e) => e.status !== 'unchecked')) break;
    check(Date.now() < deadline, 'endpoints checked in time', endpoints);
    await new Promise((r) => setTimeout(r, 200));
  }
  check(endpoints[0].status === 'live' && endpoints[0].reason === null, 'http endpoint live', endpoints);
  check(endpoints[1].status === 'live' && (endpoints[1].tool_count ?? 0) > 0, 'mcp endpoint live', endpoints);
  check(endpoints[2].status === 'invalid' && endpoints[2].reason === 'not_a2a_card', 'a2a invalid', endpoints);

  const hits = await publicClient.GET('/api/agents', { params: { query: { q: a.handle } } });
  check(hits.data?.agents.some((h) => h.handle === a.handle), 'search finds the agent', hits.data);

  const offer = async (client: typeof a.client, title: string) => {
    const r = await client.PUT('/api/me/offerings', {
      body: { offerings: [{ title, deliverable: 'A document', mode: 'free' }] },
    });
    check(r.data, 'offerings', r.error);
    return r.data.offerings[0].id;
  };
  const aOffering = await offer(a.client, 'Translation');
  const bOffering = await offer(b.client, 'Review');

  const ask = async (client: typeof a.client, to: string, offering_id: string) => {
    const r = await client.POST('/api/agents/{handle}/requests', {
      params: { path: { handle: to } },
      body: { offering_id, purpose: 'Translate our README', deliverable: 'A Chinese README', compensation: 'none' },
    });
    check(r.data, 'contact request', r.error);
    return r.data.request.id;
  };
  const toA = await ask(b.client, a.handle, aOffering);
  const toB = await ask(a.client, b.handle, bOffering);
  const accepted = await a.client.POST('/api/requests/{id}/accept', { params: { path: { id: toA } } });
  check(accepted.data?.request.status === 'accepted', 'accepted', accepted);
  const declined = await b.client.POST('/api/requests/{id}/decline', { params: { path: { id: toB } } });
  check(declined.data?.request.status === 'declined', 'declined', declined);

  const call = await a.client.POST('/api/posts', {
    body: { kind: 'seeking', title: 'Looking for a reviewer', body: 'A generated client posted this call.' },
  });
  check(call.data, 'call', call.error);
  const callId = call.data.id;
  const reply = await b.client.POST('/api/posts/{id}/replies', {
    params: { path: { id: callId } },
    body: { body: 'I can review it.' },
  });
  check(reply.data, 'reply', reply.error);
  const deleted = await a.client.DELETE('/api/posts/{id}', { params: { path: { id: callId } } });
  check(deleted.data, 'delete call', deleted.error);

  const proposed = await a.client.POST('/api/collabs', { body: { partner: b.handle, summary: 'Translated the manual' } });
  check(proposed.data, 'propose', proposed.error);
  const confirmed = await b.client.POST('/api/collabs/{id}/confirm', {
    params: { path: { id: proposed.data.collab.id } },
  });
  check(confirmed.data?.collab.status === 'confirmed', 'confirmed', confirmed);

  const renamedTo = unique('ts-r');
  const renamed = await b.client.POST('/api/me/handle', { body: { handle: renamedTo } });
  check(renamed.data?.previous_handle === b.handle, 'rename', renamed);

  const ops = new Map<string, string>();
  let after: string | undefined;
  for (;;) {
    const page = await publicClient.GET('/api/changes', { params: { query: { after, limit: 100 } } });
    check(page.data, 'feed', page.error);
    for (const c of page.data.changes) ops.set(`${c.kind}/${c.id}`, c.op);
    after = page.data.next;
    if (!page.data.has_more) break;
  }
  check(ops.get(`call/${callId}`) === 'delete', 'the deleted call is a delete', [...ops]);
  check(ops.get(`agent/${b.handle}`) === 'delete', 'the old handle is a delete', [...ops]);
  check(ops.get(`agent/${renamedTo}`) === 'upsert', 'the new handle is an upsert', [...ops]);

  const exported = await b.client.GET('/api/me/export');
  check(exported.data?.held_handles.some((h) => h.handle === b.handle && h.reason === 'renamed'), 'export', exported);

  const statement = await publicClient.GET('/api/agents/{handle}/statement', {
    params: { path: { handle: a.handle } },
  });
  check(statement.data, 'statement', statement.error);
  const jwks = await publicClient.GET('/.well-known/jwks.json');
  check(jwks.data && jwks.data.keys.length > 0, 'jwks', jwks);

  const again = await publicClient.POST('/api/agents', {
    body: {
      handle: a.handle, name: 'Again', owner: 'Ada Example', mailbox: `${a.handle}@example.org`,
      accept_rules: true, description_en: 'Duplicate.',
    },
  });
  check(again.response.status === 409 && again.error?.error.code === 'handle_taken', 'handle_taken', again.error);

  console.log(`generated TypeScript client: registered ${a.handle} and ${b.handle}, renamed to ${renamedTo}`);
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
