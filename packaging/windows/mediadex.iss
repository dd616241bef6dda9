; Inno Setup 6 script for mediadex on Windows: a per-user install (no administrator rights)
; with a Start menu entry and an optional desktop icon. Both start `mediadex.exe` without
; arguments, the foreground (desktop) mode: it indexes the libraries and opens its page in
; the default browser; the release binary is a GUI-subsystem program, so no console opens.
; Build on Windows (not done on the Linux machines mediadex is developed on):
;   cargo build --profile dist --target x86_64-pc-windows-msvc   (or -gnu)
;   iscc /DBinary=..\..\target\x86_64-pc-windows-msvc\dist\mediadex.exe packaging\windows\mediadex.iss
; The icon: packaging/linux/mediadex.svg converted to mediadex.ico (e.g. ImageMagick:
;   magick -background none packaging/linux/mediadex.svg -define icon:auto-resize=256,64,48,32,16 mediadex.ico)

#ifndef Binary
  #define Binary "..\..\target\dist\mediadex.exe"
#endif
#define AppVersion "0.1.0"

[Setup]
AppId={{6C1D2E2B-6E0B-4C1B-9B55-5E2D4F0A7D31}
AppName=mediadex
AppVersion={#AppVersion}
AppPublisher=mediadex
DefaultDirName={localappdata}\Programs\mediadex
DefaultGroupName=mediadex
PrivilegesRequired=lowest
DisableProgramGroupPage=yes
OutputBaseFilename=mediadex-{#AppVersion}-setup
SetupIconFile=mediadex.ico
UninstallDisplayIcon={app}\mediadex.exe
Compression=lzma2
SolidCompression=yes
ArchitecturesAllowed=x64compatible
ArchitecturesInstallIn64BitMode=x64compatible
LicenseFile=..\..\README.md

[Tasks]
Name: "desktopicon"; Description: "{cm:CreateDesktopIcon}"; GroupDescription: "{cm:AdditionalIcons}"; Flags: unchecked

[Files]
Source: "{#Binary}"; DestDir: "{app}"; DestName: "mediadex.exe"; Flags: ignoreversion
Source: "mediadex.ico"; DestDir: "{app}"; Flags: ignoreversion

[Icons]
Name: "{group}\mediadex"; Filename: "{app}\mediadex.exe"; IconFilename: "{app}\mediadex.ico"
Name: "{autodesktop}\mediadex"; Filename: "{app}\mediadex.exe"; IconFilename: "{app}\mediadex.ico"; Tasks: desktopicon

[Run]
Filename: "{app}\mediadex.exe"; Description: "{cm:LaunchProgram,mediadex}"; Flags: nowait postinstall skipifsilent

; The index (%APPDATA%\mediadex\data) is the user's data and stays on uninstall (the
; README beside this script says how to remove it).
