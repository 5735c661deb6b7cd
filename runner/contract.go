package runner

// The contract's names, kept in package runner for its callers: the
// request, the result, the presets, the sessions' and processes' types and
// their errors are defined in package contract.

import "github.com/boxer-dev/boxer/runner/contract"

// The contract's types.
type (
	// Ceilings is contract.Ceilings.
	Ceilings = contract.Ceilings
	// Cell is contract.Cell.
	Cell = contract.Cell
	// CellRecord is contract.CellRecord.
	CellRecord = contract.CellRecord
	// CheckpointError is contract.CheckpointError.
	CheckpointError = contract.CheckpointError
	// Kept is contract.Kept.
	Kept = contract.Kept
	// EndedSession is contract.EndedSession.
	EndedSession = contract.EndedSession
	// FieldError is contract.FieldError.
	FieldError = contract.FieldError
	// File is contract.File.
	File = contract.File
	// FileEntry is contract.FileEntry.
	FileEntry = contract.FileEntry
	// FileEvent is contract.FileEvent.
	FileEvent = contract.FileEvent
	// Health is contract.Health.
	Health = contract.Health
	// Held is contract.Held.
	Held = contract.Held
	// ImageError is contract.ImageError.
	ImageError = contract.ImageError
	// InjectedHeader is contract.InjectedHeader.
	InjectedHeader = contract.InjectedHeader
	// LimitError is contract.LimitError.
	LimitError = contract.LimitError
	// Maxima is contract.Maxima.
	Maxima = contract.Maxima
	// NetworkStats is contract.NetworkStats.
	NetworkStats = contract.NetworkStats
	// PathError is contract.PathError.
	PathError = contract.PathError
	// PortError is contract.PortError.
	PortError = contract.PortError
	// Preloads is contract.Preloads.
	Preloads = contract.Preloads
	// Preset is contract.Preset.
	Preset = contract.Preset
	// ProcessEvent is contract.ProcessEvent.
	ProcessEvent = contract.ProcessEvent
	// ProcessInfo is contract.ProcessInfo.
	ProcessInfo = contract.ProcessInfo
	// ProcessRequest is contract.ProcessRequest.
	ProcessRequest = contract.ProcessRequest
	// Request is contract.Request.
	Request = contract.Request
	// Result is contract.Result.
	Result = contract.Result
	// ReturnedFile is contract.ReturnedFile.
	ReturnedFile = contract.ReturnedFile
	// Seconds is contract.Seconds.
	Seconds = contract.Seconds
	// Session is contract.Session.
	Session = contract.Session
	// SessionCall is contract.SessionCall.
	SessionCall = contract.SessionCall
	// SessionEndedError is contract.SessionEndedError.
	SessionEndedError = contract.SessionEndedError
	// SessionLimitError is contract.SessionLimitError.
	SessionLimitError = contract.SessionLimitError
	// SessionMaxima is contract.SessionMaxima.
	SessionMaxima = contract.SessionMaxima
	// SessionPausedError is contract.SessionPausedError.
	SessionPausedError = contract.SessionPausedError
	// SessionRequest is contract.SessionRequest.
	SessionRequest = contract.SessionRequest
	// SessionStats is contract.SessionStats.
	SessionStats = contract.SessionStats
	// SessionWatch is contract.SessionWatch.
	SessionWatch = contract.SessionWatch
	// Shape is contract.Shape.
	Shape = contract.Shape
	// TermSize is contract.TermSize.
	TermSize = contract.TermSize
)

// The contract's constants: defaults, field names, statuses.
const (
	// CellBash is contract.CellBash.
	CellBash = contract.CellBash
	// CellJavaScript is contract.CellJavaScript.
	CellJavaScript = contract.CellJavaScript
	// CellTypeScript is contract.CellTypeScript.
	CellTypeScript = contract.CellTypeScript
	// CellPython is contract.CellPython.
	CellPython = contract.CellPython
	// CellCreate is contract.CellCreate.
	CellCreate = contract.CellCreate
	// CellDrop is contract.CellDrop.
	CellDrop = contract.CellDrop
	// CellExec is contract.CellExec.
	CellExec = contract.CellExec
	// CellReset is contract.CellReset.
	CellReset = contract.CellReset
	// DefaultCPUs is contract.DefaultCPUs.
	DefaultCPUs = contract.DefaultCPUs
	// DefaultGID is contract.DefaultGID.
	DefaultGID = contract.DefaultGID
	// DefaultMaxSessionLifetime is contract.DefaultMaxSessionLifetime.
	DefaultMaxSessionLifetime = contract.DefaultMaxSessionLifetime
	// DefaultMaxSessions is contract.DefaultMaxSessions.
	DefaultMaxSessions = contract.DefaultMaxSessions
	// DefaultMemory is contract.DefaultMemory.
	DefaultMemory = contract.DefaultMemory
	// DefaultNetBytes is contract.DefaultNetBytes.
	DefaultNetBytes = contract.DefaultNetBytes
	// DefaultNetConns is contract.DefaultNetConns.
	DefaultNetConns = contract.DefaultNetConns
	// DefaultNetwork is contract.DefaultNetwork.
	DefaultNetwork = contract.DefaultNetwork
	// DefaultOutputLimit is contract.DefaultOutputLimit.
	DefaultOutputLimit = contract.DefaultOutputLimit
	// DefaultPids is contract.DefaultPids.
	DefaultPids = contract.DefaultPids
	// DefaultProcessesPerCaller is contract.DefaultProcessesPerCaller.
	DefaultProcessesPerCaller = contract.DefaultProcessesPerCaller
	// DefaultReadyMaxAge is contract.DefaultReadyMaxAge.
	DefaultReadyMaxAge = contract.DefaultReadyMaxAge
	// DefaultReturnBytes is contract.DefaultReturnBytes.
	DefaultReturnBytes = contract.DefaultReturnBytes
	// DefaultRingBytes is contract.DefaultRingBytes.
	DefaultRingBytes = contract.DefaultRingBytes
	// DefaultRuntime is contract.DefaultRuntime.
	DefaultRuntime = contract.DefaultRuntime
	// DefaultSessionIdle is contract.DefaultSessionIdle.
	DefaultSessionIdle = contract.DefaultSessionIdle
	// DefaultSessionLifetime is contract.DefaultSessionLifetime.
	DefaultSessionLifetime = contract.DefaultSessionLifetime
	// DefaultStandbyIdle is contract.DefaultStandbyIdle.
	DefaultStandbyIdle = contract.DefaultStandbyIdle
	// DefaultStreamsPerCaller is contract.DefaultStreamsPerCaller.
	DefaultStreamsPerCaller = contract.DefaultStreamsPerCaller
	// DefaultTimeout is contract.DefaultTimeout.
	DefaultTimeout = contract.DefaultTimeout
	// DefaultTmpSize is contract.DefaultTmpSize.
	DefaultTmpSize = contract.DefaultTmpSize
	// DefaultUID is contract.DefaultUID.
	DefaultUID = contract.DefaultUID
	// DefaultWatchesPerCaller is contract.DefaultWatchesPerCaller.
	DefaultWatchesPerCaller = contract.DefaultWatchesPerCaller
	// ExitBoxer is contract.ExitBoxer.
	ExitBoxer = contract.ExitBoxer
	// ExitCannotExec is contract.ExitCannotExec.
	ExitCannotExec = contract.ExitCannotExec
	// ExitNotFound is contract.ExitNotFound.
	ExitNotFound = contract.ExitNotFound
	// ExitOOM is contract.ExitOOM.
	ExitOOM = contract.ExitOOM
	// ExitTimeout is contract.ExitTimeout.
	ExitTimeout = contract.ExitTimeout
	// FieldAllowHosts is contract.FieldAllowHosts.
	FieldAllowHosts = contract.FieldAllowHosts
	// FieldArgs is contract.FieldArgs.
	FieldArgs = contract.FieldArgs
	// FieldCPUs is contract.FieldCPUs.
	FieldCPUs = contract.FieldCPUs
	// FieldCode is contract.FieldCode.
	FieldCode = contract.FieldCode
	// FieldCommand is contract.FieldCommand.
	FieldCommand = contract.FieldCommand
	// FieldCopyIn is contract.FieldCopyIn.
	FieldCopyIn = contract.FieldCopyIn
	// FieldCopyOut is contract.FieldCopyOut.
	FieldCopyOut = contract.FieldCopyOut
	// FieldCount is contract.FieldCount.
	FieldCount = contract.FieldCount
	// FieldCwd is contract.FieldCwd.
	FieldCwd = contract.FieldCwd
	// FieldEnv is contract.FieldEnv.
	FieldEnv = contract.FieldEnv
	// FieldFiles is contract.FieldFiles.
	FieldFiles = contract.FieldFiles
	// FieldIdle is contract.FieldIdle.
	FieldIdle = contract.FieldIdle
	// FieldImage is contract.FieldImage.
	FieldImage = contract.FieldImage
	// FieldLang is contract.FieldLang.
	FieldLang = contract.FieldLang
	// FieldLifetime is contract.FieldLifetime.
	FieldLifetime = contract.FieldLifetime
	// FieldMemory is contract.FieldMemory.
	FieldMemory = contract.FieldMemory
	// FieldNetBytes is contract.FieldNetBytes.
	FieldNetBytes = contract.FieldNetBytes
	// FieldNetwork is contract.FieldNetwork.
	FieldNetwork = contract.FieldNetwork
	// FieldOutputLimit is contract.FieldOutputLimit.
	FieldOutputLimit = contract.FieldOutputLimit
	// FieldPTY is contract.FieldPTY.
	FieldPTY = contract.FieldPTY
	// FieldPath is contract.FieldPath.
	FieldPath = contract.FieldPath
	// FieldPids is contract.FieldPids.
	FieldPids = contract.FieldPids
	// FieldPort is contract.FieldPort.
	FieldPort = contract.FieldPort
	// FieldPreload is contract.FieldPreload.
	FieldPreload = contract.FieldPreload
	// FieldReturnBytes is contract.FieldReturnBytes.
	FieldReturnBytes = contract.FieldReturnBytes
	// FieldReturnFiles is contract.FieldReturnFiles.
	FieldReturnFiles = contract.FieldReturnFiles
	// FieldRuntime is contract.FieldRuntime.
	FieldRuntime = contract.FieldRuntime
	// FieldSeccomp is contract.FieldSeccomp.
	FieldSeccomp = contract.FieldSeccomp
	// FieldSecrets is contract.FieldSecrets.
	FieldSecrets = contract.FieldSecrets
	// FieldSession is contract.FieldSession.
	FieldSession = contract.FieldSession
	// FieldSignal is contract.FieldSignal.
	FieldSignal = contract.FieldSignal
	// FieldTag is contract.FieldTag.
	FieldTag = contract.FieldTag
	// FieldTimeout is contract.FieldTimeout.
	FieldTimeout = contract.FieldTimeout
	// FieldTmpSize is contract.FieldTmpSize.
	FieldTmpSize = contract.FieldTmpSize
	// FieldUser is contract.FieldUser.
	FieldUser = contract.FieldUser
	// FileEventChmod is contract.FileEventChmod.
	FileEventChmod = contract.FileEventChmod
	// FileEventCreate is contract.FileEventCreate.
	FileEventCreate = contract.FileEventCreate
	// FileEventRemove is contract.FileEventRemove.
	FileEventRemove = contract.FileEventRemove
	// FileEventRename is contract.FileEventRename.
	FileEventRename = contract.FileEventRename
	// FileEventWrite is contract.FileEventWrite.
	FileEventWrite = contract.FileEventWrite
	// FileTypeDir is contract.FileTypeDir.
	FileTypeDir = contract.FileTypeDir
	// FileTypeFile is contract.FileTypeFile.
	FileTypeFile = contract.FileTypeFile
	// FileTypeOther is contract.FileTypeOther.
	FileTypeOther = contract.FileTypeOther
	// FileTypeSymlink is contract.FileTypeSymlink.
	FileTypeSymlink = contract.FileTypeSymlink
	// HeldProcess is contract.HeldProcess.
	HeldProcess = contract.HeldProcess
	// HeldStream is contract.HeldStream.
	HeldStream = contract.HeldStream
	// HeldWatch is contract.HeldWatch.
	HeldWatch = contract.HeldWatch
	// MaxForks is contract.MaxForks.
	MaxForks = contract.MaxForks
	// MaxProcesses is contract.MaxProcesses.
	MaxProcesses = contract.MaxProcesses
	// PackagesDir is contract.PackagesDir.
	PackagesDir = contract.PackagesDir
	// SecretsDir is contract.SecretsDir.
	SecretsDir = contract.SecretsDir
	// SessionHome is contract.SessionHome.
	SessionHome = contract.SessionHome
	// StandbyPerShape is contract.StandbyPerShape.
	StandbyPerShape = contract.StandbyPerShape
	// StandbyTotal is contract.StandbyTotal.
	StandbyTotal = contract.StandbyTotal
	// StatusError is contract.StatusError.
	StatusError = contract.StatusError
	// StatusExited is contract.StatusExited.
	StatusExited = contract.StatusExited
	// StatusKilled is contract.StatusKilled.
	StatusKilled = contract.StatusKilled
	// StatusOOM is contract.StatusOOM.
	StatusOOM = contract.StatusOOM
	// StatusTimeout is contract.StatusTimeout.
	StatusTimeout = contract.StatusTimeout
	// StreamPTY is contract.StreamPTY.
	StreamPTY = contract.StreamPTY
	// StreamStderr is contract.StreamStderr.
	StreamStderr = contract.StreamStderr
	// StreamStdout is contract.StreamStdout.
	StreamStdout = contract.StreamStdout
	// TrustBundle is contract.TrustBundle.
	TrustBundle = contract.TrustBundle
)

// The contract's errors and functions.
var (
	// ErrFileExists is contract.ErrFileExists.
	ErrFileExists = contract.ErrFileExists
	// ErrFileNotFound is contract.ErrFileNotFound.
	ErrFileNotFound = contract.ErrFileNotFound
	// ErrImageNotFound is contract.ErrImageNotFound.
	ErrImageNotFound = contract.ErrImageNotFound
	// ErrInterrupted is contract.ErrInterrupted.
	ErrInterrupted = contract.ErrInterrupted
	// ErrInvalid is contract.ErrInvalid.
	ErrInvalid = contract.ErrInvalid
	// ErrLeadsOut is contract.ErrLeadsOut.
	ErrLeadsOut = contract.ErrLeadsOut
	// ErrNameTooLong is contract.ErrNameTooLong.
	ErrNameTooLong = contract.ErrNameTooLong
	// ErrNoNetwork is contract.ErrNoNetwork.
	ErrNoNetwork = contract.ErrNoNetwork
	// ErrNotCheckpointable is contract.ErrNotCheckpointable.
	ErrNotCheckpointable = contract.ErrNotCheckpointable
	// ErrSnapshotNotFound is contract.ErrSnapshotNotFound.
	ErrSnapshotNotFound = contract.ErrSnapshotNotFound
	// ErrNotRegular is contract.ErrNotRegular.
	ErrNotRegular = contract.ErrNotRegular
	// ErrProcessNotFound is contract.ErrProcessNotFound.
	ErrProcessNotFound = contract.ErrProcessNotFound
	// ErrSessionFull is contract.ErrSessionFull.
	ErrSessionFull = contract.ErrSessionFull
	// ErrSessionNotFound is contract.ErrSessionNotFound.
	ErrSessionNotFound = contract.ErrSessionNotFound
	// ErrSessionPaused is contract.ErrSessionPaused.
	ErrSessionPaused = contract.ErrSessionPaused
	// CheckFileMetadata is contract.CheckFileMetadata.
	CheckFileMetadata = contract.CheckFileMetadata
	// CheckLimit is contract.CheckLimit.
	CheckLimit = contract.CheckLimit
	// EndText is contract.EndText.
	EndText = contract.EndText
	// LookupPreset is contract.LookupPreset.
	LookupPreset = contract.LookupPreset
	// Networks is contract.Networks.
	Networks = contract.Networks
	// ParsePreloads is contract.ParsePreloads.
	ParsePreloads = contract.ParsePreloads
	// ParseSignal is contract.ParseSignal.
	ParseSignal = contract.ParseSignal
	// ParseSize is contract.ParseSize.
	ParseSize = contract.ParseSize
	// ParseSizeLimit is contract.ParseSizeLimit.
	ParseSizeLimit = contract.ParseSizeLimit
	// ParseTimeout is contract.ParseTimeout.
	ParseTimeout = contract.ParseTimeout
	// ParseUser is contract.ParseUser.
	ParseUser = contract.ParseUser
	// Preloadable is contract.Preloadable.
	Preloadable = contract.Preloadable
	// PresetNames is contract.PresetNames.
	PresetNames = contract.PresetNames
	// Presets is contract.Presets.
	Presets = contract.Presets
	// Runtimes is contract.Runtimes.
	Runtimes = contract.Runtimes
	// StandbyEligible is contract.StandbyEligible.
	StandbyEligible = contract.StandbyEligible
	// StandbyRequest is contract.StandbyRequest.
	StandbyRequest = contract.StandbyRequest
	// ValidUTF8 is contract.ValidUTF8.
	ValidUTF8 = contract.ValidUTF8
)
