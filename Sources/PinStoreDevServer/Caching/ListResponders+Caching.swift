import Foundation

/// HTTP caching for what the server serves: validators, `304 Not Modified` and `Cache-Control`.
extension ListResponders {
    /// `Cache-Control` of a static list and of key documents, for a CDN or any shared cache in
    /// front of the server: anyone may store them (they are signed and public), for 60 seconds,
    /// and never serve them stale.
    ///
    /// Short, because a list published after a partner re-pins must reach clients within about
    /// a minute: a cache adds at most `max-age` to that, whatever chain of caches sits in front
    /// (each counts the `Age` the one before it reported). `must-revalidate` keeps a cache that
    /// cannot reach the server from serving an old list past those 60 seconds instead of an
    /// error, which a store answers by keeping the list it has. Revalidating costs a `304`
    /// without a body while the list has not changed (``ConditionalRequest``).
    package static let cacheableCacheControl = "public, max-age=60, must-revalidate"

    /// `Cache-Control` of every challenge-mode response: the signature covers the client's own
    /// challenge, so a stored response is useless to any other request, and serving it again
    /// would hand a client a signature over someone else's challenge.
    package static let challengeCacheControl = "no-store"

    /// `200` with `body` and its validators, or `304` without a body when the request's
    /// conditions say the client holds these bytes already.
    static func cacheableResponse(to request: ListServerRequest, body: Data, entityTag: EntityTag,
                                  contentType: String, tracker: RepresentationTracker) -> ListServerResponse {
        let now = tracker.clock()
        let validators = tracker.validators(servingBytesTagged: entityTag, at: now)
        // RFC 9110 8.8.2.1: never a Last-Modified later than the Date sent with it.
        let lastModified = min(validators.lastModified, now)
        let headers = [
            ("ETag", validators.entityTag.headerValue),
            ("Last-Modified", HTTPDate.string(from: lastModified)),
            ("Cache-Control", cacheableCacheControl),
            ("Date", HTTPDate.string(from: now)),
        ]
        if ConditionalRequest.isNotModified(request, validators: validators, now: now) {
            // RFC 9110 15.4.5: the validators and Cache-Control a 200 would carry, no content
            // and no content metadata.
            return ListServerResponse(status: 304, headers: headers)
        }
        return ListServerResponse(status: 200, headers: [("Content-Type", contentType)] + headers, body: body)
    }
}
