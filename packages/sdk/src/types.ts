import type { components, operations } from "./gen/openapi.js";

/** Every named object of the API document (`Schemas["Resource"]`, `Schemas["Job"]`, ...). */
export type Schemas = components["schemas"];

/** An operation of the API document, by its `operationId` (`createResource`). */
export type OperationId = keyof operations;

/** Query parameter names as the API's fields: a list sent as `ids[]=a&ids[]=b` is the field `ids`. */
type Unbracketed<Q> = { [K in keyof Q as K extends `${infer Name}[]` ? Name : K]: Q[K] };

/** The query parameters of a GET (or DELETE) operation, by field name. */
export type Query<Id extends OperationId> = Unbracketed<NonNullable<operations[Id]["parameters"]["query"]>>;

/** The JSON body of a POST operation. */
export type Body<Id extends OperationId> = NonNullable<operations[Id]["requestBody"]> extends { content: { "application/json": infer B } } ? B : never;

/** The `multipart/form-data` body of a POST operation (a file upload). */
export type MultipartBody<Id extends OperationId> =
  NonNullable<operations[Id]["requestBody"]> extends { content: { "multipart/form-data": infer B } } ? B : never;

/** At most one of two parameters (two cursors; `type` and `types`): the API refuses both with 400. */
export type AtMostOne<Q, A extends keyof Q, B extends keyof Q> = ({ [K in A]?: Q[K] } & { [K in B]?: never }) | ({ [K in A]?: never } & { [K in B]?: Q[K] });

/** The objects of the API by their usual names. */
export type Resource = Schemas["Resource"];
export type Event = Schemas["Event"];
export type Job = Schemas["Job"];
export type JobPreview = Schemas["JobPreview"];
export type WebhookEndpoint = Schemas["WebhookEndpoint"];
export type WebhookAttempt = Schemas["WebhookAttempt"];
export type FileObject = Schemas["File"];
export type Upload = Schemas["Upload"];
export type RequestLog = Schemas["RequestLog"];
