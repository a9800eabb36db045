/// What HTTP allows in a request head on the wire (RFC 9110 section 5.6.2 for tokens, 5.5 for
/// field values; RFC 9112 section 3.2 for the request target), checked byte by byte while the
/// pinned transport builds the head (``PinnedHTTPSTransport/head(for:url:target:settings:bodyLength:)``).
/// A CR or LF in a name, a value or the target could otherwise end the head early and smuggle a
/// request of the caller's making past the checks. NIO's `NIOHTTPRequestHeadersValidator`
/// enforces the same grammar; here it costs no pass of its own.
enum RequestHeadRules {
    /// How the transport treats a header field the caller set.
    enum Kind: Equatable {
        /// `Host`: must name the URL's host (it is set from the URL).
        case host
        /// `Content-Length` and `Transfer-Encoding`: set from the body the request really has.
        case framing
        case other
    }

    static func kind(of name: String) -> Kind {
        // Only names of these lengths can be one of the three: most names are not lowercased.
        switch name.utf8.count {
        case 4: name.lowercased() == "host" ? .host : .other
        case 14: name.lowercased() == "content-length" ? .framing : .other
        case 17: name.lowercased() == "transfer-encoding" ? .framing : .other
        default: .other
        }
    }

    /// A token (RFC 9110 `tchar`s, at least one): header names and methods.
    static func isToken(_ text: String) -> Bool {
        var text = text
        return text.withUTF8 { bytes in
            !bytes.isEmpty && bytes.allSatisfy { byte in
                switch byte {
                case UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
                     UInt8(ascii: "!"), UInt8(ascii: "#"), UInt8(ascii: "$"), UInt8(ascii: "%"), UInt8(ascii: "&"), UInt8(ascii: "'"),
                     UInt8(ascii: "*"), UInt8(ascii: "+"), UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "^"), UInt8(ascii: "_"),
                     UInt8(ascii: "`"), UInt8(ascii: "|"), UInt8(ascii: "~"):
                    true
                default:
                    false
                }
            }
        }
    }

    /// A field value: no control character but the horizontal tab (CR, LF and NUL above all).
    static func isFieldValue(_ text: String) -> Bool {
        var text = text
        return text.withUTF8 { bytes in
            bytes.allSatisfy { $0 == UInt8(ascii: "\t") || ($0 >= 0x20 && $0 != 0x7F) }
        }
    }

    /// A request target's bytes: RFC 3986's unreserved characters, delimiters and `%` (for
    /// percent-encoded bytes); no space, control or non-ASCII byte.
    static func isRequestTarget(_ text: String) -> Bool {
        var text = text
        return text.withUTF8 { bytes in
            bytes.allSatisfy { byte in
                switch byte {
                case UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
                     UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "~"), UInt8(ascii: "%"),
                     UInt8(ascii: "!"), UInt8(ascii: "$"), UInt8(ascii: "&"), UInt8(ascii: "'"), UInt8(ascii: "("), UInt8(ascii: ")"),
                     UInt8(ascii: "*"), UInt8(ascii: "+"), UInt8(ascii: ","), UInt8(ascii: ";"), UInt8(ascii: "="),
                     UInt8(ascii: ":"), UInt8(ascii: "@"), UInt8(ascii: "/"), UInt8(ascii: "?"), UInt8(ascii: "#"),
                     UInt8(ascii: "["), UInt8(ascii: "]"):
                    true
                default:
                    false
                }
            }
        }
    }
}
