// A local OpenID Provider for the OIDC checks of scripts/browser.sh: npm
// `oidc-provider` (a certified OpenID Provider implementation) on
// 127.0.0.2 (another site than the inbox on 127.0.0.1, so the browser
// treats the sign-in's way back as cross-site, as it is in production),
// with its development login and consent pages. People (any password):
//   ana  groups sre
//   bo   groups sre, oncall
//   ed   groups dev
// One client, `askgate-inbox`: the authorization code flow, its secret
// sent as client_secret_basic, coming back to REDIRECT_URI. The id token
// carries preferred_username and groups.
//
//   node oidc_provider.mjs PORT NODE_MODULES REDIRECT_URI
// Prints "ready" once it listens.
import { generateKeyPairSync } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

const [port, modules, redirectUri] = [Number(process.argv[2]), process.argv[3], process.argv[4]];
const manifest = JSON.parse(readFileSync(join(modules, 'oidc-provider', 'package.json'), 'utf8'));
const { default: Provider } = await import(
    pathToFileURL(join(modules, 'oidc-provider', manifest.main ?? 'lib/index.js')).href
);
const issuer = `http://127.0.0.2:${port}`;
const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
const key = { ...privateKey.export({ format: 'jwk' }), kid: 'browser-1', use: 'sig', alg: 'RS256' };

const people = { ana: ['sre'], bo: ['sre', 'oncall'], ed: ['dev'] };

const provider = new Provider(issuer, {
    clients: [
        {
            client_id: 'askgate-inbox',
            client_secret: 'askgate-inbox-secret-0123456789abcdef',
            grant_types: ['authorization_code'],
            response_types: ['code'],
            redirect_uris: [redirectUri],
            token_endpoint_auth_method: 'client_secret_basic'
        }
    ],
    jwks: { keys: [key] },
    claims: { openid: ['sub'], profile: ['preferred_username', 'groups'] },
    // The profile claims in the id token itself, not only at userinfo.
    conformIdTokenClaims: false,
    features: { devInteractions: { enabled: true } },
    findAccount: (_ctx, id) =>
        people[id] && {
            accountId: id,
            claims: () => ({ sub: id, preferred_username: id, groups: people[id] })
        }
});
provider.listen(port, '127.0.0.2', () => console.log('ready'));
