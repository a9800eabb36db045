import ArgumentParser
import PinStore

/// `pinstore`: keys, signed fingerprint lists, certificate inspection and a development list
/// server for PinStore's dynamic certificate pinning.
@main
struct PinStoreCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "pinstore",
        abstract: "Make keys, sign and check fingerprint lists, inspect certificates, serve lists for development.",
        discussion: """
            A typical session:
              pinstore keygen --out list-signing.key.pem
              pinstore fingerprint api.example.com
              pinstore sign --key list-signing.key.pem --host api.example.com --out list.json
              pinstore verify list.json --public-key BC3kV9OIDnMu...Nv+XE=
              pinstore serve --key list-signing.key.pem --list list.json --port 8080
              pinstore publish run --file publication.json
            """,
        version: PinStoreVersion.current,
        subcommands: [
            KeygenCommand.self,
            PublicKeyCommand.self,
            FingerprintCommand.self,
            SignCommand.self,
            KeysCommand.self,
            CertificateTransparencyCommand.self,
            RevocationCommand.self,
            VerifyCommand.self,
            ServeCommand.self,
            PublishCommand.self,
            ReportsCommand.self,
            PoliciesCommand.self,
            DemoCommand.self,
        ]
    )
}
