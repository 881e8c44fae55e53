// Package sysmem allocates the tools' large particle arrays so that their
// memory is committed in one call rather than one page fault at a time.
// core and format take the allocator as a hook (core.Config.Alloc,
// format.CloudOptions.Alloc) and stay free of system calls.
package sysmem
