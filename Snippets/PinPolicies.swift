// snippet.hide
// The article "Pin policies" (PinStore). Compiled by `swift build`, never run.
import Foundation
import PinStore

let listURL = URL(string: "https://pins.example.net/list.json")!
let listKey = "BC3kV9OIDnMu...Nv+XE="
// snippet.show
let configuration = PinStore.Configuration(
    serviceURL: listURL, publicKey: listKey,
    policies: [
        // Leaf key (NSPinnedLeafIdentities): survives a renewal with the same key.
        PinPolicy(domain: "api.example.com", pins: [
            .leafKey(spkiSHA256Base64: "9Bjf0EyzJ2qVhNXH6IuplC6glEuU0Xf5WcNQy5Fz9jM="),
            .leafKey(spkiSHA256Base64: "bF3pC9Ou1AQa1XdqgjqbrX9WhmHy6vHD5RvPbbPgYXg="),   // backup key
        ]),
        // CA key (NSPinnedCAIdentities): any certificate above the leaf in the validated chain.
        PinPolicy(domain: "example.com", includesSubdomains: true, pins: [
            .caKey(spkiSHA256Base64: "C5+lpZ7tcVwmwQIMcRtPbsQtWLABXhQzejna0wHFr8M="),
            .caKey(spkiSHA256Base64: "r/mIkG3eEpVdm+u/ko/cwxzOMo1bk4TyHIlByibiA5E="),
        ], expiration: Date(timeIntervalSince1970: 1_830_297_600)),   // stops enforcing after 2028-01-01
        // Key at a fixed depth, and certificate fingerprints (the list's kind) at a depth or anywhere.
        PinPolicy(domain: "**.cdn.example.com", pins: [
            .key(spkiSHA256Base64: "YLh1dUR9y6Kja30RrAn7JKnbQG/uEtLMkBgFF2Fuihg=", depth: 1),
            .certificate(sha256Base64: "Vjs8r4z+80wjNcr1YKepWQboSIRi63WsWXhIMN+eWys=", depth: nil),
        ]),
    ],
    deniedPublicKeys: ["47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU="])   // refused for every host
