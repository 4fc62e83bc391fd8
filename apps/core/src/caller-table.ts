// What other packages may use of core's caller table (@rms/core/clients): the clients file's checks, against the
// methods core serves, so a file made elsewhere (the Helm chart's) is checked by the same rules core starts with.
export { ClientsFileError, parseClientsFile } from "./clients/file.js";
export { SERVED_METHODS } from "./domains.js";
