import Foundation
import Glibc
import Testing
import TestSupport

/// `atsgate profile` run for real: the .mobileconfig it writes is checked against Apple's profile
/// reference twice, once parsed by Foundation's PropertyListSerialization and once by Python's
/// plistlib (a second, independent parser), with the lab's values where the device reads them.
@Suite struct ProfileCommandTests {
    /// plistlib's reading of a profile as tagged JSON (ProfileSchema.problems(taggedJSON:)): bool is
    /// told from int, bytes from str, as Python types them.
    static let plistlibScript = """
        import base64, datetime, json, plistlib, sys
        def tag(value):
            if isinstance(value, bool): return {"type": "boolean", "value": value}
            if isinstance(value, int): return {"type": "integer", "value": value}
            if isinstance(value, float): return {"type": "real", "value": value}
            if isinstance(value, str): return {"type": "string", "value": value}
            if isinstance(value, bytes): return {"type": "data", "value": base64.b64encode(value).decode()}
            if isinstance(value, datetime.datetime): return {"type": "date", "value": value.strftime("%Y-%m-%dT%H:%M:%SZ")}
            if isinstance(value, list): return {"type": "array", "value": [tag(item) for item in value]}
            if isinstance(value, dict): return {"type": "dictionary", "value": {key: tag(item) for key, item in value.items()}}
            raise TypeError(type(value).__name__)
        with open(sys.argv[1], "rb") as file:
            print(json.dumps(tag(plistlib.load(file, fmt=plistlib.FMT_XML))))
        """

    /// Both parsers' verdicts on a written profile, and the profile as Foundation reads it.
    static func validate(_ xml: Data, in directory: TemporaryDirectory) throws -> [String: Any] {
        #expect(ProfileSchema.problems(xml: xml) == [], "PropertyListSerialization")
        let path = try directory.write("check-\(UUID().uuidString).mobileconfig", xml)
        let plistlib = try Subprocess.run(Origin.python, ["-c", plistlibScript, path])
        try #require(plistlib.status == 0, "plistlib: \(plistlib.stderr)")
        #expect(ProfileSchema.problems(taggedJSON: Data(plistlib.stdout.utf8)) == [], "plistlib")
        let object = try PropertyListSerialization.propertyList(from: xml, format: nil)
        return try #require(object as? [String: Any])
    }

    static func payloads(_ profile: [String: Any]) -> [[String: Any]] {
        profile["PayloadContent"] as? [[String: Any]] ?? []
    }

    static func payload(_ profile: [String: Any], type: String) throws -> [String: Any] {
        try #require(payloads(profile).first { $0["PayloadType"] as? String == type }, "no \(type) payload")
    }

    static func mode(of path: String) -> mode_t {
        var status = stat()
        stat(path, &status)
        return status.st_mode & 0o777
    }

    /// The lab's usual profile: the global proxy with a login, and the CA of --listen-tls.
    @Test func globalProxyWithLoginAndTheLabCA() throws {
        let directory = try TemporaryDirectory()
        let password = "correct horse \(UInt32.random(in: 0...UInt32.max))"
        let passwordFile = try directory.write("proxy-password", password + "\n")
        let output = directory.url.appendingPathComponent("lab.mobileconfig").path
        let ca = try TestPKI.shared.path("ca.pem")
        let run = try Atsgate.run(["profile", "--proxy", "atsgate.lab.example:3128", "--user", "lab",
                                   "--password-file", passwordFile, "--ca", ca, "--identifier", "com.example.lab",
                                   "--organization", "Example Lab", "--output", output])
        #expect(run.status == 0, "\(run.stderr)")
        #expect(run.stdout.isEmpty)
        #expect(run.stderr.split(separator: "\n").count == 1, "one line: \(run.stderr)")
        #expect(run.stderr.contains("written to \(output)"))
        #expect(run.stderr.contains("supervised"), "the global proxy's limit is said")
        #expect(!run.stderr.contains(password))
        #expect(Self.mode(of: output) == 0o600, "a profile holding a password is its owner's alone")

        let profile = try Self.validate(try Data(contentsOf: URL(fileURLWithPath: output)), in: directory)
        #expect(profile["PayloadIdentifier"] as? String == "com.example.lab")
        #expect(profile["PayloadType"] as? String == "Configuration")
        #expect(profile["PayloadOrganization"] as? String == "Example Lab")
        let proxy = try Self.payload(profile, type: "com.apple.proxy.http.global")
        #expect(proxy["PayloadIdentifier"] as? String == "com.example.lab.proxy")
        #expect(proxy["ProxyType"] as? String == "Manual")
        #expect(proxy["ProxyServer"] as? String == "atsgate.lab.example")
        #expect(proxy["ProxyServerPort"] as? Int == 3128)
        #expect(proxy["ProxyUsername"] as? String == "lab")
        #expect(proxy["ProxyPassword"] as? String == password)

        // The root payload carries the certificate itself, as openssl converts it to DER.
        let root = try Self.payload(profile, type: "com.apple.security.root")
        #expect(root["PayloadIdentifier"] as? String == "com.example.lab.ca.1")
        #expect(root["PayloadCertificateFileName"] as? String == "ca.cer")
        #expect(root["PayloadDisplayName"] as? String == "atsgate Test Root CA")
        let der = directory.url.appendingPathComponent("ca.der").path
        let converted = try Subprocess.run("/usr/bin/openssl", ["x509", "-in", ca, "-outform", "der", "-out", der])
        try #require(converted.status == 0, "\(converted.stderr)")
        #expect(root["PayloadContent"] as? Data == (try Data(contentsOf: URL(fileURLWithPath: der))))
    }

    /// `--pac` to standard output: ProxyType Auto, no server keys, PAC fallback off.
    @Test func pacProfileOnStandardOutput() throws {
        let directory = try TemporaryDirectory()
        let run = try Atsgate.run(["profile", "--pac", "http://atsgate.lab.example:3128/proxy.pac"])
        #expect(run.status == 0, "\(run.stderr)")
        #expect(run.stderr.contains("written to standard output"))
        #expect(run.stdout.hasPrefix("<?xml version=\"1.0\" encoding=\"UTF-8\"?>"))
        let profile = try Self.validate(Data(run.stdout.utf8), in: directory)
        #expect(profile["PayloadIdentifier"] as? String == "atsgate.lab", "the default prefix")
        #expect(Self.payloads(profile).count == 1)
        let proxy = try Self.payload(profile, type: "com.apple.proxy.http.global")
        #expect(proxy["ProxyType"] as? String == "Auto")
        #expect(proxy["ProxyPACURL"] as? String == "http://atsgate.lab.example:3128/proxy.pac")
        #expect(proxy["ProxyPACFallbackAllowed"] as? Bool == false)
        #expect(proxy["ProxyServer"] == nil && proxy["ProxyUsername"] == nil)
    }

    @Test func noDirectFallbackWritesProxyPACFallbackAllowedFalseAndConflictsAreNamed() throws {
        let directory = try TemporaryDirectory()
        let run = try Atsgate.run(["profile", "--pac", "http://atsgate.lab.example:3128/proxy.pac", "--no-direct-fallback"])
        #expect(run.status == 0, "\(run.stderr)")
        let proxy = try Self.payload(try Self.validate(Data(run.stdout.utf8), in: directory), type: "com.apple.proxy.http.global")
        #expect(proxy["ProxyPACFallbackAllowed"] as? Bool == false)
        let both = try Atsgate.run(["profile", "--pac", "http://a.example/proxy.pac", "--no-direct-fallback", "--pac-fallback"])
        #expect(both.status == 2 && both.stderr == "atsgate: --pac-fallback and --no-direct-fallback exclude each other\n")
        let manual = try Atsgate.run(["profile", "--proxy", "10.0.0.1:3128", "--no-direct-fallback"])
        #expect(manual.status == 2 && manual.stderr.hasPrefix("atsgate: --no-direct-fallback needs --pac URL: ProxyPACFallbackAllowed"))
        let allowed = try Atsgate.run(["profile", "--pac", "http://a.example/proxy.pac", "--pac-fallback"])
        #expect(try Self.payload(try Self.validate(Data(allowed.stdout.utf8), in: directory),
                                 type: "com.apple.proxy.http.global")["ProxyPACFallbackAllowed"] as? Bool == true)
    }

    /// `--password-file -`: the password on standard input, out of shell history and the process list.
    @Test func passwordFromStandardInput() throws {
        let directory = try TemporaryDirectory()
        let run = try Atsgate.run(["profile", "--proxy", "[2001:db8::10]:3128", "--user", "lab", "--password-file", "-"],
                                  stdin: "from stdin: ok\r\n")
        #expect(run.status == 0, "\(run.stderr)")
        let proxy = try Self.payload(try Self.validate(Data(run.stdout.utf8), in: directory), type: "com.apple.proxy.http.global")
        #expect(proxy["ProxyServer"] as? String == "2001:db8::10")
        #expect(proxy["ProxyPassword"] as? String == "from stdin: ok")
        #expect(!run.stderr.contains("from stdin"))
    }

    /// `--wifi`: the proxy rides on the network's payload; no global proxy payload, so no supervision.
    @Test func wifiPayloadCarriesTheProxy() throws {
        let directory = try TemporaryDirectory()
        let wifiPassword = try directory.write("wifi-password", "lab-wifi-passphrase\n")
        let output = directory.url.appendingPathComponent("wifi.mobileconfig").path
        let run = try Atsgate.run(["profile", "--proxy", "192.168.50.10:3128", "--user", "phone-7", "--password-file", "-",
                                   "--wifi", "DeviceLab 5G", "--wifi-security", "wpa3", "--wifi-password-file", wifiPassword,
                                   "--wifi-hidden", "--identifier", "com.example.lab.wifi", "--output", output],
                                  stdin: "phone-7-password\n")
        #expect(run.status == 0, "\(run.stderr)")
        #expect(!run.stderr.contains("supervised"))
        #expect(!run.stderr.contains("lab-wifi-passphrase") && !run.stderr.contains("phone-7-password"))
        #expect(Self.mode(of: output) == 0o600)
        let profile = try Self.validate(try Data(contentsOf: URL(fileURLWithPath: output)), in: directory)
        #expect(Self.payloads(profile).count == 1)
        let wifi = try Self.payload(profile, type: "com.apple.wifi.managed")
        #expect(wifi["PayloadIdentifier"] as? String == "com.example.lab.wifi.wifi")
        #expect(wifi["SSID_STR"] as? String == "DeviceLab 5G")
        #expect(wifi["EncryptionType"] as? String == "WPA3")
        #expect(wifi["Password"] as? String == "lab-wifi-passphrase")
        #expect(wifi["HIDDEN_NETWORK"] as? Bool == true)
        #expect(wifi["ProxyType"] as? String == "Manual")
        #expect(wifi["ProxyServer"] as? String == "192.168.50.10")
        #expect(wifi["ProxyServerPort"] as? Int == 3128)
        #expect(wifi["ProxyUsername"] as? String == "phone-7")
        #expect(wifi["ProxyPassword"] as? String == "phone-7-password")
    }

    /// Without a secret the file is an ordinary one (the umask's mode); rewriting replaces it whole.
    @Test func profileWithoutSecretsIsAnOrdinaryFile() throws {
        let directory = try TemporaryDirectory()
        let output = try directory.write("open.mobileconfig", "old contents that are not a profile")
        let run = try Atsgate.run(["profile", "--pac", "http://10.0.0.1:3128/proxy.pac", "--wifi", "Open Lab",
                                   "--wifi-security", "None", "--output", output])
        #expect(run.status == 0, "\(run.stderr)")
        let mask = umask(0)
        umask(mask)
        #expect(Self.mode(of: output) == 0o666 & ~mask)
        let wifi = try Self.payload(try Self.validate(try Data(contentsOf: URL(fileURLWithPath: output)), in: directory),
                                    type: "com.apple.wifi.managed")
        #expect(wifi["EncryptionType"] as? String == "None")
        #expect(wifi["Password"] == nil)
        let leftovers = try FileManager.default.contentsOfDirectory(atPath: directory.url.path).filter { $0.hasPrefix(".atsgate-profile") }
        #expect(leftovers.isEmpty, "no temporary file stays behind")
    }

    /// Every run: new UUIDs for the profile and each payload, unique within it; the same identifiers.
    @Test func freshUUIDsOnEveryRun() throws {
        let directory = try TemporaryDirectory()
        let arguments = ["profile", "--proxy", "atsgate.lab.example:3128", "--ca", try TestPKI.shared.path("ca.pem"),
                         "--ca", try TestPKI.shared.path("system-ca.pem")]
        var runs: [(uuids: [String], identifiers: [String])] = []
        for _ in 0..<2 {
            let run = try Atsgate.run(arguments)
            #expect(run.status == 0, "\(run.stderr)")
            let profile = try Self.validate(Data(run.stdout.utf8), in: directory)
            let all = [profile] + Self.payloads(profile)
            runs.append((all.compactMap { $0["PayloadUUID"] as? String }, all.compactMap { $0["PayloadIdentifier"] as? String }))
        }
        #expect(runs[0].uuids.count == 4 && Set(runs[0].uuids).count == 4)
        #expect(Set(runs[0].uuids).isDisjoint(with: runs[1].uuids))
        #expect(runs[0].identifiers == ["atsgate.lab", "atsgate.lab.ca.1", "atsgate.lab.ca.2", "atsgate.lab.proxy"])
        #expect(runs[0].identifiers == runs[1].identifiers, "a regenerated profile replaces the installed one")
    }

    /// A DER file, and a PEM file with two roots of which one was given already: each root once.
    @Test func rootsFromDERAndMultiCertificatePEM() throws {
        let directory = try TemporaryDirectory()
        let pki = TestPKI.shared
        let both = try directory.write("both.pem", try String(contentsOfFile: try pki.path("ca.pem"), encoding: .utf8)
                                           + String(contentsOfFile: try pki.path("system-ca.pem"), encoding: .utf8))
        let run = try Atsgate.run(["profile", "--proxy", "atsgate.lab.example:3128", "--ca", try pki.path("ca.der"), "--ca", both])
        #expect(run.status == 0, "\(run.stderr)")
        let roots = Self.payloads(try Self.validate(Data(run.stdout.utf8), in: directory))
            .filter { $0["PayloadType"] as? String == "com.apple.security.root" }
        #expect(roots.map { $0["PayloadCertificateFileName"] as? String } == ["ca.cer", "both-2.cer"])
        #expect(roots.map { $0["PayloadDisplayName"] as? String } == ["atsgate Test Root CA", "atsgate Test System Root"])
        #expect(roots.first?["PayloadContent"] as? Data == (try Data(contentsOf: URL(fileURLWithPath: try pki.path("ca.der")))))
        #expect(run.stderr.contains("root certificates atsgate Test Root CA, atsgate Test System Root"))
    }

    /// Bad input: exit 2, one line naming the flag, nothing written, no password repeated.
    @Test(arguments: [
        ([], "--proxy HOST:PORT", "needs"),
        (["--proxy", "atsgate.lab.example"], "--proxy atsgate.lab.example", "missing port"),
        (["--proxy", "atsgate.lab.example:99999"], "--proxy", "invalid port"),
        (["--proxy", "0.0.0.0:3128"], "--proxy 0.0.0.0:3128", "not one a device can reach"),
        (["--proxy", "h:1", "--pac", "http://h/p.pac"], "--proxy and --pac", "exclude"),
        (["--pac", "ftp://lab.example/proxy.pac"], "--pac ftp://lab.example/proxy.pac", "http:// and https://"),
        (["--pac", "lab.example/proxy.pac"], "--pac", "not a URL"),
        (["--pac", "http://lab.example/proxy.pac", "--user", "lab"], "--user", "--proxy"),
        (["--proxy", "h:1", "--identifier", "lab"], "--identifier lab", "reverse-DNS"),
        (["--proxy", "h:1", "--identifier", "com.example.my_lab"], "--identifier com.example.my_lab", "'_'"),
        (["--proxy", "h:1", "--ca", "@notacert"], "--ca", "not a certificate"),
        (["--proxy", "h:1", "--ca", "@key"], "--ca", "private key"),
        (["--proxy", "h:1", "--ca", "@intermediate"], "--ca", "not a root"),
        (["--proxy", "h:1", "--ca", "@expired"], "--ca", "expired on 2020-02-01"),
        (["--proxy", "h:1", "--ca", "/nonexistent/lab-ca.pem"], "--ca /nonexistent/lab-ca.pem", "no such file"),
        (["--proxy", "h:1", "--password-file", "@password"], "--password-file", "--user"),
        (["--proxy", "h:1", "--user", "lab", "--password-file", "/nonexistent/pw"], "--password-file /nonexistent/pw", "no such file"),
        (["--proxy", "h:1", "--user", "lab", "--password-file", "@twolines"], "--password-file", "more than one line"),
        (["--proxy", "h:1", "--wifi", "Lab"], "--wifi Lab", "no password"),
        (["--proxy", "h:1", "--wifi", "Lab", "--wifi-password", "short12"], "--wifi-password", "8 to 63"),
        (["--proxy", "h:1", "--wifi", "Lab", "--wifi-security", "WPA4"], "--wifi-security WPA4", "one of"),
        (["--proxy", "h:1", "--wifi-password-file", "@password"], "--wifi-password-file", "--wifi SSID"),
        (["--proxy", "h:1", "--wifi", "Lab", "--captive-login"], "--captive-login", "Wi-Fi"),
        (["--proxy", "h:1", "--name", "two\nlines"], "--name", "control character"),
        (["--proxy", "h:1", "--output", "/nonexistent/dir/lab.mobileconfig"], "--output /nonexistent/dir/lab.mobileconfig",
         "No such file"),
    ] as [([String], String, String)])
    func badInputExitsTwoNamingTheFlag(arguments: [String], flag: String, words: String) throws {
        let directory = try TemporaryDirectory()
        let pki = TestPKI.shared
        let files: [String: String] = [
            "@notacert": try directory.write("notes.txt", "this is not a certificate\n"),
            "@key": try pki.path("good-rsa.key"),
            "@intermediate": try pki.path("intermediate.pem"),
            "@expired": arguments.contains("@expired") ? try Self.expiredRoot(in: directory) : "",
            "@password": try directory.write("pw", "secret-one\n"),
            "@twolines": try directory.write("htpasswd", "secret-one\nlab:$2y$05$abc\n"),
        ]
        let output = directory.url.appendingPathComponent("never.mobileconfig").path
        var resolved = arguments.map { files[$0] ?? $0 }
        if !resolved.contains("--output") { resolved += ["--output", output] }
        let run = try Atsgate.run(["profile"] + resolved)
        #expect(run.status == 2)
        #expect(run.stdout.isEmpty)
        let lines = run.stderr.split(separator: "\n")
        #expect(lines.count == 1, "one line: \(run.stderr)")
        #expect(run.stderr.hasPrefix("atsgate: \(flag)") || run.stderr.hasPrefix("atsgate: profile needs"), "\(run.stderr)")
        #expect(run.stderr.contains(flag) && run.stderr.contains(words), "\(run.stderr)")
        for secret in ["secret-one", "short12"] { #expect(!run.stderr.contains(secret)) }
        #expect(!FileManager.default.fileExists(atPath: output))
    }

    /// The password typed at the prompt is not echoed, and ends up in the profile.
    @Test func promptedPasswordIsNotEchoed() throws {
        let directory = try TemporaryDirectory()
        let output = directory.url.appendingPathComponent("typed.mobileconfig").path
        // A pseudo-terminal: the command sees a terminal on standard input and error, as a person's shell.
        let driver = """
            import os, pty, select, sys, time
            pid, fd = pty.fork()
            if pid == 0:
                os.execv(sys.argv[1], sys.argv[1:])
            seen = b""
            def read_until(marker):
                global seen
                deadline = time.time() + 20
                while marker not in seen and time.time() < deadline:
                    if select.select([fd], [], [], 0.2)[0]:
                        try:
                            chunk = os.read(fd, 4096)
                        except OSError:
                            return
                        if not chunk:
                            return
                        seen += chunk
            read_until(b"Password of proxy user lab: ")
            os.write(fd, b"typed-secret-42\\n")
            read_until(b"\\x00never")
            _, status = os.waitpid(pid, 0)
            sys.stdout.write(seen.decode(errors="replace"))
            sys.exit(os.waitstatus_to_exitcode(status))
            """
        let run = try Subprocess.run(Origin.python, ["-c", driver, Atsgate.binary.path, "profile", "--proxy", "h.lab.example:3128",
                                                     "--user", "lab", "--output", output], timeout: 60)
        #expect(run.status == 0, "\(run.stdout) \(run.stderr)")
        #expect(run.stdout.contains("Password of proxy user lab: "))
        #expect(!run.stdout.contains("typed-secret-42"), "echoed: \(run.stdout)")
        let proxy = try Self.payload(try Self.validate(try Data(contentsOf: URL(fileURLWithPath: output)), in: directory),
                                     type: "com.apple.proxy.http.global")
        #expect(proxy["ProxyPassword"] as? String == "typed-secret-42")
    }

    /// `--password VALUE` works, and says once the profile is written where the value can be seen.
    @Test func passwordOnTheCommandLineWarns() throws {
        let directory = try TemporaryDirectory()
        let run = try Atsgate.run(["profile", "--proxy", "atsgate.lab.example:3128", "--user", "lab", "--password", "argv-pass-9"])
        #expect(run.status == 0, "\(run.stderr)")
        let lines = run.stderr.split(separator: "\n")
        #expect(lines.count == 2)
        #expect(lines.first?.hasPrefix("atsgate: warning: --password puts the password in the process list") == true)
        #expect(!run.stderr.contains("argv-pass-9"))
        let proxy = try Self.payload(try Self.validate(Data(run.stdout.utf8), in: directory), type: "com.apple.proxy.http.global")
        #expect(proxy["ProxyPassword"] as? String == "argv-pass-9")
    }

    @Test func helpListsTheCommandAndItsFlags() throws {
        let top = try Atsgate.run(["--help"])
        #expect(top.stdout.contains("profile"))
        let help = try Atsgate.run(["profile", "--help"])
        #expect(help.status == 0)
        for flag in ["--proxy", "--pac", "--user", "--password-file", "--wifi", "--wifi-security", "--wifi-password-file",
                     "--ca", "--identifier", "--output"] {
            #expect(help.stdout.contains(flag), "\(flag)")
        }
    }

    /// A self-signed root that expired in 2020 (openssl ca -selfsign sets the dates that req cannot).
    static func expiredRoot(in directory: TemporaryDirectory) throws -> String {
        let script = """
            set -e
            cd "$1"
            mkdir -p db && : > db/index.txt && echo 01 > db/serial
            printf '[ca]\\ndefault_ca = c\\n[c]\\ndatabase = db/index.txt\\nserial = db/serial\\nnew_certs_dir = db\\ndefault_md = sha256\\npolicy = p\\n[p]\\ncommonName = supplied\\n[x]\\nbasicConstraints = critical, CA:true\\n' > ca.cnf
            openssl req -new -newkey rsa:2048 -nodes -keyout old.key -out old.csr -subj "/CN=old lab CA" 2>/dev/null
            openssl ca -batch -selfsign -config ca.cnf -keyfile old.key -in old.csr -out old-ca.pem -notext \\
                -startdate 20200101000000Z -enddate 20200201000000Z -extfile ca.cnf -extensions x 2>/dev/null
            """
        let run = try Subprocess.run("/bin/sh", ["-c", script, "sh", directory.url.path])
        try #require(run.status == 0, "openssl: \(run.stderr)")
        return directory.url.appendingPathComponent("old-ca.pem").path
    }
}
