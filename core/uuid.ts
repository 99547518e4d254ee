/** A UUID as text, either case (8-4-4-4-12 hex digits): tenant ids, transaction ids, messageIds. */
export const UUID = /^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$/;
