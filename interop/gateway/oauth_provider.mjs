// A local OAuth authorization server for the `oauth` suite of
// scripts/gateway-e2e.sh: npm `oidc-provider` (a certified OpenID
// Provider) on 127.0.0.1, issuing client-credentials access tokens as JWTs
// (RFC 9068) for the resource it is told of, signed with a key made at
// start, and opaque tokens for one client, which askgate asks the provider
// about (token introspection, RFC 7662). Clients:
//   ci-agent      scope askgate:call, tokens for 5 minutes
//   brief         scope askgate:call, tokens for 1 second (to expire)
//   narrow        scope other only (no askgate:call)
//   opaque-agent  scope askgate:call, opaque tokens
//   askgate-rs    askgate itself, introspecting opaque tokens
//
//   node oauth_provider.mjs PORT NODE_MODULES
// Prints "ready" once it listens.
import { generateKeyPairSync } from "node:crypto";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";

const port = Number(process.argv[2]);
const modules = process.argv[3];
const manifest = JSON.parse(readFileSync(join(modules, "oidc-provider", "package.json"), "utf8"));
const { default: Provider } = await import(
  pathToFileURL(join(modules, "oidc-provider", manifest.main ?? "lib/index.js")).href
);
const issuer = `http://127.0.0.1:${port}`;
const { privateKey } = generateKeyPairSync("rsa", { modulusLength: 2048 });
const key = { ...privateKey.export({ format: "jwk" }), kid: "e2e-1", use: "sig", alg: "RS256" };

const client = (id, scope) => ({
  client_id: id,
  client_secret: `${id}-secret-0123456789abcdef`,
  grant_types: ["client_credentials"],
  redirect_uris: [],
  response_types: [],
  scope,
});

const provider = new Provider(issuer, {
  clients: [
    client("ci-agent", "askgate:call"),
    client("brief", "askgate:call"),
    client("narrow", "other"),
    client("opaque-agent", "askgate:call"),
    client("askgate-rs", "other"),
  ],
  jwks: { keys: [key] },
  scopes: ["askgate:call", "other"],
  features: {
    devInteractions: { enabled: false },
    clientCredentials: { enabled: true },
    introspection: { enabled: true },
    resourceIndicators: {
      enabled: true,
      defaultResource: () => undefined,
      useGrantedResource: () => true,
      getResourceServerInfo: (_ctx, resource, client) => ({
        scope: "askgate:call other",
        audience: resource,
        accessTokenTTL: client.clientId === "brief" ? 1 : 300,
        accessTokenFormat: client.clientId === "opaque-agent" ? "opaque" : "jwt",
        jwt: { sign: { alg: "RS256" } },
      }),
    },
  },
});
provider.listen(port, "127.0.0.1", () => console.log("ready"));
