// A real OpenID provider (the oidc-provider package) for the daemon's tests, on loopback.
//
// Started by the Rust test harness (tests/it/oidc_provider.rs) as `node provider.mjs`; it
// listens on a free port of 127.0.0.1 and prints one JSON line, `{"issuer": ...}`, when it
// is ready. Settings come from the environment:
//   OIDC_ACCESS_TOKEN_TTL  seconds an access token of the sign-in client lives (3600)
//   OIDC_AUDIENCE          the audience of the JWT access tokens issued for resources
//   OIDC_API_TOKEN_TTL     seconds a JWT access token for that audience lives (300)
//
// It knows one client from the start: `provisioning-cli`, the command line's public client
// (no secret; a loopback redirect on any port, and the device authorization grant, whose
// pages are the package's own).
//
// Besides the provider's own routes it has its own login and consent pages under
// /interaction/ and a few test controls under /test/ (register a client once the daemon's
// port is known, change an account, end every refresh token), which only a test harness
// would call.

import http from 'node:http';
import { URLSearchParams } from 'node:url';

import Provider from 'oidc-provider';

const accessTokenTtl = Number(process.env.OIDC_ACCESS_TOKEN_TTL || 3600);
const audience = process.env.OIDC_AUDIENCE || 'https://provisioning.test/api';
const apiTokenTtl = Number(process.env.OIDC_API_TOKEN_TTL || 300);

// The command line's public client, as an operator would register it.
const cliClient = {
  client_id: 'provisioning-cli',
  application_type: 'native',
  token_endpoint_auth_method: 'none',
  redirect_uris: ['http://127.0.0.1/callback'],
  grant_types: ['authorization_code', 'refresh_token', 'urn:ietf:params:oauth:grant-type:device_code'],
  response_types: ['code'],
};

// The test accounts: a password each; `groups` is set for one of them only. Emails are
// verified (`email_verified: true`) unless `emailVerified` is false, as a provider that lets
// users type any email in would say.
const accounts = {
  alice: { password: 'alice-password', email: 'alice@example.org', name: 'Alice Example', groups: ['gpu-users', 'staff'] },
  bob: { password: 'bob-password', email: 'Bob@Example.org', name: 'Bob Example' },
  carol: { password: 'carol-password', email: 'carol@example.org', name: 'Carol Example' },
  // No email: a token for this account maps to no user unless it signed in.
  noemail: { password: 'noemail-password', name: 'No Email' },
  // The built-in admin's email, unverified and verified.
  squatter: { password: 'squatter-password', email: 'admin@localhost', emailVerified: false, name: 'Squatter' },
  localadmin: { password: 'localadmin-password', email: 'Admin@localhost', name: 'Local Admin' },
  // One email, said by an account that did not verify it and by one that did.
  dave: { password: 'dave-password', email: 'dave@example.org', name: 'Dave Example' },
  notdave: { password: 'notdave-password', email: 'dave@example.org', emailVerified: false, name: 'Not Dave' },
  // A second account with Alice's verified email.
  alicetwin: { password: 'alicetwin-password', email: 'alice@example.org', name: 'Alice Twin' },
};

// The claims of an account's email.
function emailClaims(account) {
  if (!account.email) return {};
  return { email: account.email, email_verified: account.emailVerified !== false };
}

// Everything the provider stores, in memory, by model name: this process lives one test.
const stores = new Map();
function storeOf(model) {
  if (!stores.has(model)) stores.set(model, new Map());
  return stores.get(model);
}

class MemoryAdapter {
  constructor(model) {
    this.model = model;
    this.store = storeOf(model);
  }

  async upsert(id, payload, expiresIn) {
    const expiresAt = expiresIn ? Date.now() + expiresIn * 1000 : Infinity;
    this.store.set(id, { payload, expiresAt });
  }

  async find(id) {
    const entry = this.store.get(id);
    if (!entry) return undefined;
    if (entry.expiresAt <= Date.now()) {
      this.store.delete(id);
      return undefined;
    }
    return entry.payload;
  }

  async findByUid(uid) {
    for (const [id, entry] of this.store) {
      if (entry.payload.uid === uid) return this.find(id);
    }
    return undefined;
  }

  async findByUserCode(userCode) {
    for (const [id, entry] of this.store) {
      if (entry.payload.userCode === userCode) return this.find(id);
    }
    return undefined;
  }

  async consume(id) {
    const entry = this.store.get(id);
    if (entry) entry.payload.consumed = Math.floor(Date.now() / 1000);
  }

  async destroy(id) {
    this.store.delete(id);
  }

  async revokeByGrantId(grantId) {
    for (const [model, store] of stores) {
      if (model === 'Client') continue;
      for (const [id, entry] of store) {
        if (entry.payload.grantId === grantId) store.delete(id);
      }
    }
  }
}

// Resource indicators the provider issues JWT access tokens for. The short-lived one has
// the real audience: a token for it expires within seconds, for the expiry test.
const resources = {
  [audience]: { audience, ttl: apiTokenTtl },
  'https://provisioning.test/short-lived': { audience, ttl: 1 },
  'https://elsewhere.test/api': { audience: 'https://elsewhere.test/api', ttl: 300 },
};

function configuration() {
  return {
    adapter: MemoryAdapter,
    clients: [cliClient],
    async findAccount(_ctx, id) {
      const account = accounts[id];
      if (!account) return undefined;
      return {
        accountId: id,
        async claims() {
          const claims = { sub: id, name: account.name, ...emailClaims(account) };
          if (account.groups) claims.groups = account.groups;
          return claims;
        },
      };
    },
    claims: {
      openid: ['sub'],
      // The groups come with the profile, so the default scopes carry them.
      profile: ['name', 'groups'],
      email: ['email', 'email_verified'],
    },
    scopes: ['openid', 'offline_access', 'profile', 'email'],
    features: {
      devInteractions: { enabled: false },
      revocation: { enabled: true },
      // The device flow's pages: plain forms, as a browser would show them.
      deviceFlow: {
        enabled: true,
        async userCodeInputSource(ctx, form) {
          ctx.body = page('Enter the code', `${form}<button type="submit" form="op.deviceInputForm">Continue</button>`);
        },
        async userCodeConfirmSource(ctx, form, _client, _deviceInfo, userCode) {
          ctx.body = page('Confirm the code', `<p>${escapeHtml(userCode)}</p>${form}<button type="submit" form="op.deviceConfirmForm">Continue</button>`);
        },
        async successSource(ctx) {
          ctx.body = page('Signed in', '<p>You can close this page.</p>');
        },
      },
      rpInitiatedLogout: { enabled: true },
      resourceIndicators: {
        enabled: true,
        // No resource asked for: the access token is for the userinfo endpoint.
        defaultResource: async () => undefined,
        useGrantedResource: async () => true,
        getResourceServerInfo: async (_ctx, indicator) => {
          const resource = resources[indicator];
          if (!resource) throw new Provider.errors.InvalidTarget();
          return {
            scope: 'api',
            audience: resource.audience,
            accessTokenTTL: resource.ttl,
            accessTokenFormat: 'jwt',
            jwt: { sign: { alg: 'RS256' } },
          };
        },
      },
    },
    // Like most providers, a refresh token whenever the client may use one; each use
    // rotates it.
    issueRefreshToken: async (_ctx, client) => client.grantTypeAllowed('refresh_token'),
    rotateRefreshToken: true,
    // JWT access tokens carry the email, as many providers' do.
    async extraTokenClaims(_ctx, token) {
      const account = accounts[token.accountId];
      if (!account || token.kind !== 'AccessToken' || !token.resourceServer) return undefined;
      return account.email ? emailClaims(account) : undefined;
    },
    ttl: {
      AccessToken: (_ctx, token) => token.resourceServer?.accessTokenTTL || accessTokenTtl,
      AuthorizationCode: 60,
      IdToken: 3600,
      RefreshToken: 24 * 3600,
      Interaction: 600,
      Session: 3600,
      Grant: 24 * 3600,
    },
    pkce: { required: () => true },
    cookies: { keys: ['test-provider-cookie-key'] },
  };
}

const page = (title, body) => `<!DOCTYPE html><html><head><title>${title}</title></head><body><h1>${title}</h1>${body}</body></html>`;

function escapeHtml(text) {
  return String(text).replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

async function readForm(req) {
  let body = '';
  for await (const chunk of req) body += chunk;
  return Object.fromEntries(new URLSearchParams(body));
}

async function readJson(req) {
  let body = '';
  for await (const chunk of req) body += chunk;
  return JSON.parse(body || '{}');
}

function send(res, status, type, body) {
  res.writeHead(status, { 'content-type': type, 'cache-control': 'no-store' });
  res.end(body);
}

// The login and consent pages: a form each, as a browser would see them.
async function interaction(provider, req, res, url) {
  const [, , uid, action] = url.pathname.split('/');
  const details = await provider.interactionDetails(req, res);
  if (details.uid !== uid) return send(res, 400, 'text/plain', 'interaction mismatch');
  const { prompt } = details;
  if (req.method === 'GET' && !action) {
    if (prompt.name === 'login') {
      return send(res, 200, 'text/html', page('Sign in', `<form method="post" action="/interaction/${uid}/login">
<input type="text" name="login"><input type="password" name="password"><button type="submit">Sign in</button></form>`));
    }
    const scopes = (prompt.details.missingOIDCScope || []).map(escapeHtml).join(', ');
    return send(res, 200, 'text/html', page('Authorize', `<p>The application asks for: ${scopes}</p>
<form method="post" action="/interaction/${uid}/confirm"><button type="submit">Continue</button></form>`));
  }
  if (req.method === 'POST' && action === 'login') {
    const form = await readForm(req);
    const account = accounts[form.login];
    if (!account || account.password !== form.password) {
      return send(res, 401, 'text/html', page('Sign in', '<p>Wrong login or password.</p>'));
    }
    return provider.interactionFinished(req, res, { login: { accountId: form.login } }, { mergeWithLastSubmission: false });
  }
  if (req.method === 'POST' && action === 'confirm') {
    const { grantId, session, params } = details;
    const grant = grantId
      ? await provider.Grant.find(grantId)
      : new provider.Grant({ accountId: session.accountId, clientId: params.client_id });
    if (prompt.details.missingOIDCScope) grant.addOIDCScope(prompt.details.missingOIDCScope.join(' '));
    if (prompt.details.missingOIDCClaims) grant.addOIDCClaims(prompt.details.missingOIDCClaims);
    for (const [indicator, scope] of Object.entries(prompt.details.missingResourceScopes || {})) {
      grant.addResourceScope(indicator, scope.join(' '));
    }
    const consent = { grantId: await grant.save() };
    return provider.interactionFinished(req, res, { consent }, { mergeWithLastSubmission: true });
  }
  return send(res, 404, 'text/plain', 'no such interaction step');
}

// Test controls: register (or replace) a client; change an account's claims (its email, as
// a user may at their provider); end every refresh token.
async function control(req, res, url) {
  if (req.method === 'PATCH' && url.pathname.startsWith('/test/accounts/')) {
    const account = accounts[decodeURIComponent(url.pathname.slice('/test/accounts/'.length))];
    if (!account) return send(res, 404, 'text/plain', 'no such account');
    Object.assign(account, await readJson(req));
    return send(res, 204, 'text/plain', '');
  }
  if (req.method === 'PUT' && url.pathname.startsWith('/test/clients/')) {
    const metadata = await readJson(req);
    metadata.client_id = decodeURIComponent(url.pathname.slice('/test/clients/'.length));
    await new MemoryAdapter('Client').upsert(metadata.client_id, metadata);
    return send(res, 204, 'text/plain', '');
  }
  if (req.method === 'POST' && url.pathname === '/test/revoke-refresh-tokens') {
    storeOf('RefreshToken').clear();
    return send(res, 204, 'text/plain', '');
  }
  return send(res, 404, 'text/plain', 'no such control');
}

const server = http.createServer();
server.listen(0, '127.0.0.1', () => {
  const issuer = `http://127.0.0.1:${server.address().port}`;
  const provider = new Provider(issuer, configuration());
  const callback = provider.callback();
  server.on('request', (req, res) => {
    const url = new URL(req.url, issuer);
    const handled = url.pathname.startsWith('/interaction/')
      ? interaction(provider, req, res, url)
      : url.pathname.startsWith('/test/')
        ? control(req, res, url)
        : callback(req, res);
    Promise.resolve(handled).catch((error) => {
      if (!res.headersSent) send(res, 500, 'text/plain', String(error));
    });
  });
  process.stdout.write(`${JSON.stringify({ issuer })}\n`);
});

// The harness reads the first line only: later writes to a closed stdout are dropped, not
// fatal.
process.stdout.on('error', () => {});

// The harness closes stdin (or dies): the provider ends with it.
process.stdin.on('end', () => process.exit(0));
process.stdin.resume();
