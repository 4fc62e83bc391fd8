/** Page size of every list (resources, accounts): 1 to LIST_LIMIT_MAX, LIST_LIMIT_DEFAULT when not given. */
export const LIST_LIMIT_DEFAULT = 20;
export const LIST_LIMIT_MAX = 100;
