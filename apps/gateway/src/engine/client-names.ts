/**
 * What an operation is called by its clients: the namespace and method of the SDK (`resources.create`,
 * `webhookEndpoints.rotateSecret`: Stripe's names) and the OpenAPI `operationId`, a verb phrase a person reads
 * (`createResource`, `rotateWebhookEndpointSecret`). Derived from the verb and the path, so a new route is named by
 * the same rules as the others; a route the rules name badly says its method itself (`clientMethod`).
 *
 * For `/v1/<kind>...` (`kind` in the singular: `Kind`):
 *
 * | route | method | operationId |
 * |---|---|---|
 * | GET <kind> | list | list<Kinds> |
 * | POST <kind> | create | create<Kind> |
 * | GET <kind>/<word> | <word> (search) | <word><Kinds> (searchResources) |
 * | GET <kind>/:id | retrieve | retrieve<Kind> |
 * | POST <kind>/:id | update | update<Kind> |
 * | DELETE <kind>/:id | del | delete<Kind> |
 * | POST <kind>/:id/<verb_rest> | <verbRest> (rotateSecret) | <verb><Kind><Rest> (rotateWebhookEndpointSecret) |
 * | GET <kind>/:id/<noun>, a list | list<Noun> (listAttempts) | list<Kind><Noun> (listWebhookEndpointAttempts) |
 * | GET <kind>/:id/<noun>, not a list | <noun> (contents) | retrieve<Kind><Noun> (retrieveFileContents) |
 */

export interface ClientName {
  /** The SDK's namespace: the kind's path segment in camelCase (`webhookEndpoints`). */
  readonly namespace: string;
  /** The SDK's method in that namespace (`rotateSecret`). */
  readonly method: string;
  /** The OpenAPI document's `operationId` (`rotateWebhookEndpointSecret`). */
  readonly operationId: string;
}

const camel = (snake: string) => snake.replace(/_([a-z0-9])/g, (_, c: string) => c.toUpperCase());
const upperFirst = (word: string) => word[0]!.toUpperCase() + word.slice(1);

/** `<verb><Kind><Rest>` of a camelCase method: `rotateSecret` on webhook endpoints -> `rotateWebhookEndpointSecret`. */
function verbPhrase(method: string, kind: string): string {
  const [verb, ...rest] = method.split(/(?=[A-Z])/);
  return `${verb}${kind}${rest.join("")}`;
}

/**
 * The client name of `method path` (an Express path, `:id` for a parameter); `answersList` when its answer is a list
 * envelope; `override` a method named by its declaration rather than by the rules. Throws for a route no rule names.
 */
export function clientNameOf(method: string, path: string, answersList: boolean, override?: string): ClientName {
  const segments = path.split("/").filter(Boolean);
  const [version, segment, second, third, ...rest] = segments;
  if (version !== "v1" || segment === undefined) throw new Error(`client name: ${path} is not a /v1 path`);
  const namespace = camel(segment);
  const plural = upperFirst(namespace);
  const kind = plural.endsWith("s") ? plural.slice(0, -1) : plural;
  const name = (clientMethod: string, operationId: string): ClientName => ({ namespace, method: clientMethod, operationId });
  if (override) return name(override, verbPhrase(override, kind));
  const byPath: ClientName | undefined = (() => {
    if (rest.length > 0) return undefined;
    if (second === undefined) {
      if (method === "GET") return name("list", `list${plural}`);
      if (method === "POST") return name("create", `create${kind}`);
      return undefined;
    }
    if (!second.startsWith(":")) return third === undefined && method === "GET" ? name(camel(second), `${camel(second)}${plural}`) : undefined;
    if (third === undefined) {
      if (method === "GET") return name("retrieve", `retrieve${kind}`);
      if (method === "POST") return name("update", `update${kind}`);
      if (method === "DELETE") return name("del", `delete${kind}`);
      return undefined;
    }
    const word = camel(third);
    if (method === "POST") return name(word, verbPhrase(word, kind));
    if (method === "GET")
      return answersList ? name(`list${upperFirst(word)}`, `list${kind}${upperFirst(word)}`) : name(word, `retrieve${kind}${upperFirst(word)}`);
    return undefined;
  })();
  if (!byPath) throw new Error(`client name: no rule names ${method} ${path}; give the operation a clientMethod`);
  return byPath;
}
