package query

import (
	"github.com/stax-profiler/stax/internal/annotate"
	"github.com/stax-profiler/stax/internal/api"
	"github.com/stax-profiler/stax/internal/disasm"
)

// The annotate document (api.Annotate) is converted here rather than in api, which does not
// import its model: AnnotateDoc fills it from the answer, field by field; AnnotationOfDoc
// takes a document's annotation back to the model, for its text (annotate.WriteText) where
// only the document is at hand (the web page's proxy).

// AnnotateDoc is the document of an annotate answer: `stax annotate --json` and
// /v1/annotate.
func AnnotateDoc(res *AnnotateResult) api.Annotate {
	doc := api.Annotate{Schema: res.Schema, Run: res.Run, Annotation: annotationDoc(res.Annotation),
		Others:   api.ConvertSlice(res.Others, func(m Match) api.AnnotateMatch { return api.AnnotateMatch(m) }),
		Notes:    res.Notes,
		Versions: api.ConvertSlice(res.Versions, func(v CodeVersion) api.CodeVersion { return api.CodeVersion(v) }),
		Version:  res.Version, Warning: res.Warning, Window: res.Window}
	if res.Inlined != nil {
		in := api.InlinedTarget(*res.Inlined)
		doc.Inlined = &in
	}
	return doc
}

func annotationDoc(a *annotate.Annotation) *api.Annotation {
	if a == nil {
		return nil
	}
	return &api.Annotation{Func: a.Func, Image: a.Image, Arch: a.Arch, Start: a.Start, End: a.End, Total: a.Total, Outside: a.Outside,
		Focus: a.Focus, FocusSamples: a.FocusSamples, MaxSamples: a.MaxSamples, Counters: a.Counters, CounterTotals: a.CounterTotals,
		CountersMultiplexed: a.CountersMultiplexed,
		Insts:               api.ConvertSlice(a.Insts, instDoc),
		Gaps:                api.ConvertSlice(a.Gaps, func(g annotate.Gap) api.CodeGap { return api.CodeGap(g) }),
		SourceBlocks:        api.ConvertSlice(a.SourceBlocks, func(b annotate.SourceBlock) api.SourceBlock { return api.SourceBlock(b) }),
		HotLines:            api.ConvertSlice(a.HotLines, func(l annotate.LineStat) api.LineStat { return api.LineStat(l) })}
}

func instDoc(i annotate.AnnotatedInst) api.AnnotatedInst {
	return api.AnnotatedInst{Addr: i.Addr, Len: i.Len, Bytes: i.Bytes, Text: i.Text, Target: i.Target, HasTarget: i.HasTarget,
		IsCall: i.IsCall, IsJump: i.IsJump, IsRet: i.IsRet, Bad: i.Bad, DataRef: i.DataRef, HasDataRef: i.HasDataRef,
		Samples: i.Samples, Percent: i.Percent, Focus: i.Focus, Counters: i.Counters, Heat: i.Heat, Label: i.Label, JumpFrom: i.JumpFrom,
		JumpLabel: i.JumpLabel, Backward: i.Backward, Display: i.Display, Block: i.Block}
}

// AnnotationOfDoc is the model of a document's annotation (nil: nil), whose WriteText
// prints it as stax annotate does.
func AnnotationOfDoc(a *api.Annotation) *annotate.Annotation {
	if a == nil {
		return nil
	}
	return &annotate.Annotation{Func: a.Func, Image: a.Image, Arch: a.Arch, Start: a.Start, End: a.End, Total: a.Total,
		Outside: a.Outside, Focus: a.Focus, FocusSamples: a.FocusSamples, MaxSamples: a.MaxSamples,
		Counters: a.Counters, CounterTotals: a.CounterTotals, CountersMultiplexed: a.CountersMultiplexed,
		Insts:        api.ConvertSlice(a.Insts, instOfDoc),
		Gaps:         api.ConvertSlice(a.Gaps, func(g api.CodeGap) annotate.Gap { return annotate.Gap(g) }),
		SourceBlocks: api.ConvertSlice(a.SourceBlocks, func(b api.SourceBlock) annotate.SourceBlock { return annotate.SourceBlock(b) }),
		HotLines:     api.ConvertSlice(a.HotLines, func(l api.LineStat) annotate.LineStat { return annotate.LineStat(l) })}
}

func instOfDoc(i api.AnnotatedInst) annotate.AnnotatedInst {
	return annotate.AnnotatedInst{Inst: disasm.Inst{Addr: i.Addr, Len: i.Len, Bytes: i.Bytes, Text: i.Text, Target: i.Target,
		HasTarget: i.HasTarget, IsCall: i.IsCall, IsJump: i.IsJump, IsRet: i.IsRet, Bad: i.Bad, DataRef: i.DataRef,
		HasDataRef: i.HasDataRef}, Samples: i.Samples, Percent: i.Percent, Focus: i.Focus, Counters: i.Counters, Heat: i.Heat, Label: i.Label,
		JumpFrom: i.JumpFrom, JumpLabel: i.JumpLabel, Backward: i.Backward, Display: i.Display, Block: i.Block}
}
