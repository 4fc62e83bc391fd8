import { exampleId, LIST_LIMIT_MAX, SEARCH_LIMIT_DEFAULT, searchPageToken } from "@rms/proto";
import { optionalString, requiredString } from "../../parsing/params.js";
import { listLimit } from "../../schema/params.js";
import { searchResultOf } from "../../schema/objects.js";
import { defineOperation } from "../../engine/operation.js";
import { pageOf, ResourceObject } from "./objects.js";

export const ResourceSearchResultObject = searchResultOf(ResourceObject, "/v1/resources/search", LIST_LIMIT_MAX);

const QUERY_EXAMPLE = "status:'active' AND metadata['plan']:'pro'";

/**
 * GET /v1/resources/search: Stripe's search shape over the query language of CONTRACT.md section 3; the
 * query is parsed in core (resources/search-query.ts), whose refusals name the position of the problem.
 */
export const searchResources = defineOperation({
  method: "GET",
  path: "/v1/resources/search",
  summary: "Search resources",
  scope: "resources:read",
  parameters: {
    query: {
      example: QUERY_EXAMPLE,
      required: true,
      schema: {
        type: "string",
        minLength: 1,
        description:
          "Clauses joined by `AND` (or a space), or by `OR` between clauses on the same field: `status:'active'`, `name~'sta'` " +
          "(a case-insensitive prefix of at least 2 characters), `name:'Exact'`, `metadata['key']:'value'`, `created>1700000000` " +
          "(also `>=`, `<`, `<=`, `:`). Quoted strings (`\\'` escapes a quote); at most 10 clauses and 5 metadata keys.",
      },
    },
    limit: {
      example: 10,
      schema: {
        type: "integer",
        minimum: 1,
        maximum: LIST_LIMIT_MAX,
        default: SEARCH_LIMIT_DEFAULT,
        description: `Page size, 1 to ${LIST_LIMIT_MAX}; default ${SEARCH_LIMIT_DEFAULT}.`,
      },
    },
    // A token of the example query (the examples together make one valid request).
    page: {
      example: searchPageToken(exampleId("res"), QUERY_EXAMPLE),
      schema: { type: "string", minLength: 1, description: "The `next_page` of the previous answer to the same query." },
    },
  },
  success: {
    status: 200,
    description:
      "Matches, newest first. One request examines at most 1,000 resources, so a page may hold fewer than `limit` (even none) while `has_more` is " +
      "true; walking every `next_page` returns every match once.",
    object: ResourceSearchResultObject,
  },
  errors: ["parameter_missing", "search_query_invalid", "limit_invalid", "parameter_invalid"],
  service: "resources",
  rpc: "searchResources",
  request({ params, tenant }) {
    const query = requiredString(params, "query");
    const limit = listLimit(params, SEARCH_LIMIT_DEFAULT);
    // A malformed page and the query's language are core's to refuse.
    return { tenant, query, limit, page: optionalString(params, "page") ?? "", asJson: true };
  },
  reply: (answer) => ({ ...pageOf(answer, answer.hasMore), nextPage: answer.nextPage === "" ? null : answer.nextPage }),
});
