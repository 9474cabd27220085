; ---- Loom reduction kernel r1_row_sum (from "r1_row_sum"), LLVM IR for the host ----
; host schedule: 16 lanes per vector; 128 tasks of 4
; reduction: row (chunks of 8192, 256 lanes of runs of 4, butterfly, pairwise over chunks) order, 1 stage(s), 0 element output(s)
; reduction 0: sum float32 -> float32 (test_llvm_golden.cpp:101), stage 0
; element space:
; space: rank 1, 32-bit indices in the parameters
; in0: input 0, float32, contiguous
; out0: float32, contiguous
; row space:
; space: rank 1, 32-bit indices in the parameters
; in0: input 0, float32, contiguous
; out0: float32, contiguous

; row order, stage 0: the partial of chunk k of row o
;   reduction 0: sum float32 -> float32 (test_llvm_golden.cpp:101)
define internal void @r1_row_sum.chunk.s0(ptr noalias readonly %p, i64 %o, i64 %k, ptr noalias %rv, ptr noalias %part) #0 {
entry:
  %lanes0 = alloca [256 x float], align 64
  %l.slot = alloca i64
  %i.slot = alloca i64
  %active.slot = alloca i64
  %runs0 = alloca [64 x float], align 64
  %q.slot = alloca i64
  %s.slot = alloca i64
  %n_out.at = getelementptr inbounds i8, ptr %p, i64 48
  %n_out = load i64, ptr %n_out.at, align 8                                  ; O: output elements (rows)
  %len.at = getelementptr inbounds i8, ptr %p, i64 56
  %len = load i64, ptr %len.at, align 8                                      ; L: elements reduced per output
  %chunks.at = getelementptr inbounds i8, ptr %p, i64 64
  %chunks = load i64, ptr %chunks.at, align 8                                ; chunks per row
  %part0.at = getelementptr inbounds i8, ptr %p, i64 96
  %part0 = load ptr, ptr %part0.at, align 8                                  ; split workspace of reduction 0
  %el.in0.at = getelementptr inbounds i8, ptr %p, i64 0
  %el.in0 = load ptr, ptr %el.in0.at, align 8                                ; input 0 float32, contiguous (test_llvm_golden.cpp:101)
  %el.out0.at = getelementptr inbounds i8, ptr %p, i64 8
  %el.out0 = load ptr, ptr %el.out0.at, align 8                              ; output 0, contiguous
  %el.n.at = getelementptr inbounds i8, ptr %p, i64 16
  %el.n = load i32, ptr %el.n.at, align 4                                    ; elements of the iteration space
  %el.n.i64 = sext i32 %el.n to i64
  ; chunk k of row o: elements [8192 k, min(L, 8192 (k + 1))); element i goes to lane (i / 4) mod 256
  %first = mul i64 %k, 8192
  %rest = sub i64 %len, %first
  %n = call i64 @llvm.umin.i64(i64 %rest, i64 8192)                          ; elements in this chunk
  %runs = add i64 %n, 3
  %runs4 = lshr i64 %runs, 2
  %active = call i64 @llvm.umin.i64(i64 %runs4, i64 256)                     ; lanes holding elements
  store i64 %active, ptr %active.slot
  %rowbase = mul i64 %o, %len                                                ; flat index of (o, 0)
  store i64 0, ptr %l.slot
  br label %init.cond
init.cond:
  %init.l = load i64, ptr %l.slot
  %init.more = icmp ult i64 %init.l, 256
  br i1 %init.more, label %init.body, label %blocks.start
init.body:
  %init.vp = getelementptr inbounds float, ptr %lanes0, i64 %init.l
  store <16 x float> splat (float 0x8000000000000000), ptr %init.vp, align 4
  %init.next = add i64 %init.l, 16
  store i64 %init.next, ptr %l.slot
  br label %init.cond
blocks.start:
  %nblocks = udiv i64 %n, 64                                                 ; whole blocks of 64 elements (16 lanes x runs of 4)
  store i64 0, ptr %i.slot
  br label %block.cond
block.cond:
  %bi = load i64, ptr %i.slot
  %block.more = icmp ult i64 %bi, %nblocks
  br i1 %block.more, label %block.body, label %tail.start
block.body:
  %i = mul i64 %bi, 64                                                       ; position in the chunk
  %r = add i64 %first, %i                                                    ; reduced index
  %b.flat = add i64 %rowbase, %r
  %in0.block = getelementptr inbounds float, ptr %el.in0, i64 %b.flat
  %in0.p0 = getelementptr inbounds float, ptr %in0.block, i64 0
  %in0.a0 = load <16 x float>, ptr %in0.p0, align 4                          ; in0: 64 elements, deinterleaved into runs
  %in0.p1 = getelementptr inbounds float, ptr %in0.block, i64 16
  %in0.a1 = load <16 x float>, ptr %in0.p1, align 4
  %in0.p2 = getelementptr inbounds float, ptr %in0.block, i64 32
  %in0.a2 = load <16 x float>, ptr %in0.p2, align 4
  %in0.p3 = getelementptr inbounds float, ptr %in0.block, i64 48
  %in0.a3 = load <16 x float>, ptr %in0.p3, align 4
  %in0.u0 = shufflevector <16 x float> %in0.a0, <16 x float> %in0.a1, <16 x i32> <i32 0, i32 1, i32 4, i32 5, i32 8, i32 9, i32 12, i32 13, i32 16, i32 17, i32 20, i32 21, i32 24, i32 25, i32 28, i32 29>
  %in0.u1 = shufflevector <16 x float> %in0.a0, <16 x float> %in0.a1, <16 x i32> <i32 2, i32 3, i32 6, i32 7, i32 10, i32 11, i32 14, i32 15, i32 18, i32 19, i32 22, i32 23, i32 26, i32 27, i32 30, i32 31>
  %in0.u2 = shufflevector <16 x float> %in0.a2, <16 x float> %in0.a3, <16 x i32> <i32 0, i32 1, i32 4, i32 5, i32 8, i32 9, i32 12, i32 13, i32 16, i32 17, i32 20, i32 21, i32 24, i32 25, i32 28, i32 29>
  %in0.u3 = shufflevector <16 x float> %in0.a2, <16 x float> %in0.a3, <16 x i32> <i32 2, i32 3, i32 6, i32 7, i32 10, i32 11, i32 14, i32 15, i32 18, i32 19, i32 22, i32 23, i32 26, i32 27, i32 30, i32 31>
  %in0.run0 = shufflevector <16 x float> %in0.u0, <16 x float> %in0.u2, <16 x i32> <i32 0, i32 2, i32 4, i32 6, i32 8, i32 10, i32 12, i32 14, i32 16, i32 18, i32 20, i32 22, i32 24, i32 26, i32 28, i32 30>
  %in0.bp0 = getelementptr inbounds float, ptr %runs0, i64 0
  store <16 x float> %in0.run0, ptr %in0.bp0, align 4
  %in0.run1 = shufflevector <16 x float> %in0.u0, <16 x float> %in0.u2, <16 x i32> <i32 1, i32 3, i32 5, i32 7, i32 9, i32 11, i32 13, i32 15, i32 17, i32 19, i32 21, i32 23, i32 25, i32 27, i32 29, i32 31>
  %in0.bp1 = getelementptr inbounds float, ptr %runs0, i64 16
  store <16 x float> %in0.run1, ptr %in0.bp1, align 4
  %in0.run2 = shufflevector <16 x float> %in0.u1, <16 x float> %in0.u3, <16 x i32> <i32 0, i32 2, i32 4, i32 6, i32 8, i32 10, i32 12, i32 14, i32 16, i32 18, i32 20, i32 22, i32 24, i32 26, i32 28, i32 30>
  %in0.bp2 = getelementptr inbounds float, ptr %runs0, i64 32
  store <16 x float> %in0.run2, ptr %in0.bp2, align 4
  %in0.run3 = shufflevector <16 x float> %in0.u1, <16 x float> %in0.u3, <16 x i32> <i32 1, i32 3, i32 5, i32 7, i32 9, i32 11, i32 13, i32 15, i32 17, i32 19, i32 21, i32 23, i32 25, i32 27, i32 29, i32 31>
  %in0.bp3 = getelementptr inbounds float, ptr %runs0, i64 48
  store <16 x float> %in0.run3, ptr %in0.bp3, align 4
  %lane0 = mul i64 %bi, 16
  %lanes.at = and i64 %lane0, 255                                            ; first lane of the block: (i / 4) mod 256
  store i64 0, ptr %q.slot
  br label %run.cond
run.cond:
  %q = load i64, ptr %q.slot
  %run.more = icmp ult i64 %q, 4
  br i1 %run.more, label %run.body, label %block.next
run.body:
  %rq = add i64 %r, %q                                                       ; run position q: elements r + q + 4 m of lanes m
  %q.flat = add i64 %rowbase, %rq
  %in0.q = mul i64 %q, 16
  %in0.qp = getelementptr inbounds float, ptr %runs0, i64 %in0.q
  %in0.runq = load <16 x float>, ptr %in0.qp, align 4
  ; reduction 0: sum float32 -> float32 (test_llvm_golden.cpp:101)
  %lanes0.p = getelementptr inbounds float, ptr %lanes0, i64 %lanes.at
  %acc0 = load <16 x float>, ptr %lanes0.p, align 4
  %acc0.1 = fadd <16 x float> %acc0, %in0.runq
  store <16 x float> %acc0.1, ptr %lanes0.p, align 4
  %q.next = add i64 %q, 1
  store i64 %q.next, ptr %q.slot
  br label %run.cond
block.next:
  %bi.next = add i64 %bi, 1
  store i64 %bi.next, ptr %i.slot
  br label %block.cond
tail.start:
  %tail.i0 = mul i64 %nblocks, 64
  store i64 %tail.i0, ptr %i.slot
  br label %tail.cond
tail.cond:
  %ti = load i64, ptr %i.slot
  %tail.more = icmp ult i64 %ti, %n
  br i1 %tail.more, label %tail.body, label %butterfly
tail.body:
  %tr = add i64 %first, %ti
  %t.flat = add i64 %rowbase, %tr
  %el.t.v0.p = getelementptr inbounds float, ptr %el.in0, i64 %t.flat
  %el.t.v0.m = load float, ptr %el.t.v0.p, align 4                           ; load in0: float32 (contiguous, test_llvm_golden.cpp:101)
  %tl4 = lshr i64 %ti, 2
  %tlane = and i64 %tl4, 255                                                 ; lane (i / 4) mod 256
  %tl0.p = getelementptr inbounds float, ptr %lanes0, i64 %tlane
  %tacc0 = load float, ptr %tl0.p, align 4
  %tacc0.1 = fadd float %tacc0, %el.t.v0.m
  store float %tacc0.1, ptr %tl0.p, align 4
  %ti.next = add i64 %ti, 1
  store i64 %ti.next, ptr %i.slot
  br label %tail.cond
butterfly:
  store i64 128, ptr %s.slot
  br label %bf.cond
bf.cond:
  %s = load i64, ptr %s.slot
  %bf.more = icmp ne i64 %s, 0
  br i1 %bf.more, label %bf.step, label %bf.done
bf.step:
  %act = load i64, ptr %active.slot
  %bf.d = sub i64 %act, %s
  %bf.c = call i64 @llvm.smin.i64(i64 %bf.d, i64 %s)
  %bf.n = call i64 @llvm.smax.i64(i64 %bf.c, i64 0)                          ; lanes l < min(s, active - s)
  %bf.wide = icmp uge i64 %s, 16                                             ; s >= W: whole vectors
  store i64 0, ptr %l.slot
  br label %bf.w16.cond
bf.w16.cond:
  %bf.l = load i64, ptr %l.slot
  %bf.lnext = add i64 %bf.l, 16
  %bf.ok = icmp ule i64 %bf.lnext, %bf.n
  %bf.okw = and i1 %bf.ok, %bf.wide
  br i1 %bf.okw, label %bf.w16.body, label %bf.w16.done
bf.w16.body:
  %bf.ls = add i64 %bf.l, %s
  %bf.a0 = getelementptr inbounds float, ptr %lanes0, i64 %bf.l
  %bf.b0 = getelementptr inbounds float, ptr %lanes0, i64 %bf.ls
  %bf.x0 = load <16 x float>, ptr %bf.a0, align 4
  %bf.y0 = load <16 x float>, ptr %bf.b0, align 4
  %bf.c0 = fadd <16 x float> %bf.x0, %bf.y0
  store <16 x float> %bf.c0, ptr %bf.a0, align 4
  store i64 %bf.lnext, ptr %l.slot
  br label %bf.w16.cond
bf.w16.done:
  br label %bf.w1.cond
bf.w1.cond:
  %bf.l.1 = load i64, ptr %l.slot
  %bf.lnext.1 = add i64 %bf.l.1, 1
  %bf.ok.1 = icmp ule i64 %bf.lnext.1, %bf.n
  br i1 %bf.ok.1, label %bf.w1.body, label %bf.w1.done
bf.w1.body:
  %bf.ls.1 = add i64 %bf.l.1, %s
  %bf.a0.1 = getelementptr inbounds float, ptr %lanes0, i64 %bf.l.1
  %bf.b0.1 = getelementptr inbounds float, ptr %lanes0, i64 %bf.ls.1
  %bf.x0.1 = load float, ptr %bf.a0.1, align 4
  %bf.y0.1 = load float, ptr %bf.b0.1, align 4
  %bf.c0.1 = fadd float %bf.x0.1, %bf.y0.1
  store float %bf.c0.1, ptr %bf.a0.1, align 4
  store i64 %bf.lnext.1, ptr %l.slot
  br label %bf.w1.cond
bf.w1.done:
  %act.next = call i64 @llvm.umin.i64(i64 %act, i64 %s)
  store i64 %act.next, ptr %active.slot
  %s.next = lshr i64 %s, 1
  store i64 %s.next, ptr %s.slot
  br label %bf.cond
bf.done:
  %partial0 = load float, ptr %lanes0, align 4
  %part0.p = getelementptr inbounds i8, ptr %part, i64 0
  store float %partial0, ptr %part0.p, align 4
  ret void
}

; rows [begin, end): every stage, the element outputs and the row outputs
define void @r1_row_sum_rows(ptr noalias readonly %p, i64 %begin, i64 %end) #0 {
entry:
  %rv = alloca [256 x i8], align 64
  %part = alloca [512 x i8], align 64
  %o.slot = alloca i64
  %s0.stack0 = alloca [64 x float], align 64
  %s0.depth = alloca i64
  %s0.k.slot = alloca i64
  %s0.count.slot = alloca i64
  %n_out.at = getelementptr inbounds i8, ptr %p, i64 48
  %n_out = load i64, ptr %n_out.at, align 8                                  ; O: output elements (rows)
  %len.at = getelementptr inbounds i8, ptr %p, i64 56
  %len = load i64, ptr %len.at, align 8                                      ; L: elements reduced per output
  %chunks.at = getelementptr inbounds i8, ptr %p, i64 64
  %chunks = load i64, ptr %chunks.at, align 8                                ; chunks per row
  %part0.at = getelementptr inbounds i8, ptr %p, i64 96
  %part0 = load ptr, ptr %part0.at, align 8                                  ; split workspace of reduction 0
  %el.in0.at = getelementptr inbounds i8, ptr %p, i64 0
  %el.in0 = load ptr, ptr %el.in0.at, align 8                                ; input 0 float32, contiguous (test_llvm_golden.cpp:101)
  %el.out0.at = getelementptr inbounds i8, ptr %p, i64 8
  %el.out0 = load ptr, ptr %el.out0.at, align 8                              ; output 0, contiguous
  %el.n.at = getelementptr inbounds i8, ptr %p, i64 16
  %el.n = load i32, ptr %el.n.at, align 4                                    ; elements of the iteration space
  %el.n.i64 = sext i32 %el.n to i64
  %row.in0.at = getelementptr inbounds i8, ptr %p, i64 24
  %row.in0 = load ptr, ptr %row.in0.at, align 8                              ; input 0 "row value 0" float32, contiguous (test_llvm_golden.cpp:101)
  %row.out0.at = getelementptr inbounds i8, ptr %p, i64 32
  %row.out0 = load ptr, ptr %row.out0.at, align 8                            ; output 0, contiguous
  %row.n.at = getelementptr inbounds i8, ptr %p, i64 40
  %row.n = load i32, ptr %row.n.at, align 4                                  ; elements of the iteration space
  %row.n.i64 = sext i32 %row.n to i64
  store i64 %begin, ptr %o.slot
  br label %row.cond
row.cond:
  %o = load i64, ptr %o.slot
  %more = icmp ult i64 %o, %end
  br i1 %more, label %row.body, label %exit
row.body:
  ; stage 0: every chunk of row o, combined by the pairwise tree
  store float 0x8000000000000000, ptr %s0.stack0, align 4
  store i64 0, ptr %s0.depth
  store i64 0, ptr %s0.k.slot
  br label %s0.tree.head
s0.tree.head:
  %s0.k = load i64, ptr %s0.k.slot
  %s0.more = icmp ult i64 %s0.k, %chunks                                     ; a chunk left (else: the final fold)
  br i1 %s0.more, label %s0.tree.push, label %s0.merge.cond
s0.tree.push:
  call void @r1_row_sum.chunk.s0(ptr %p, i64 %o, i64 %s0.k, ptr %rv, ptr %part)
  %part0.p = getelementptr inbounds i8, ptr %part, i64 0
  %p0 = load float, ptr %part0.p, align 4
  %s0.d = load i64, ptr %s0.depth
  %s0.s0 = getelementptr inbounds float, ptr %s0.stack0, i64 %s0.d
  store float %p0, ptr %s0.s0, align 4
  %s0.d.push = add i64 %s0.d, 1                                              ; push chunk k's partial
  store i64 %s0.d.push, ptr %s0.depth
  %s0.pushed = add i64 %s0.k, 1
  store i64 %s0.pushed, ptr %s0.count.slot
  br label %s0.merge.cond
s0.merge.cond:
  %s0.c = load i64, ptr %s0.count.slot
  %s0.odd = and i64 %s0.c, 1
  %s0.even = icmp eq i64 %s0.odd, 0
  %s0.fd = load i64, ptr %s0.depth
  %s0.two = icmp ugt i64 %s0.fd, 1
  %s0.merge = select i1 %s0.more, i1 %s0.even, i1 %s0.two
  br i1 %s0.merge, label %s0.merge.body, label %s0.tree.next
s0.merge.body:
  %s0.md = load i64, ptr %s0.depth
  %s0.md1 = sub i64 %s0.md, 1
  %s0.md2 = sub i64 %s0.md, 2
  %s0.s0.1 = getelementptr inbounds float, ptr %s0.stack0, i64 %s0.md2
  %s0.s0.2 = getelementptr inbounds float, ptr %s0.stack0, i64 %s0.md1
  %s0.tx0 = load float, ptr %s0.s0.1, align 4
  %s0.ty0 = load float, ptr %s0.s0.2, align 4
  %s0.tc0 = fadd float %s0.tx0, %s0.ty0
  store float %s0.tc0, ptr %s0.s0.1, align 4
  store i64 %s0.md1, ptr %s0.depth
  %s0.c.half = lshr i64 %s0.c, 1
  store i64 %s0.c.half, ptr %s0.count.slot
  br label %s0.merge.cond
s0.tree.next:
  br i1 %s0.more, label %s0.tree.inc, label %s0.tree.done
s0.tree.inc:
  %s0.k.next = add i64 %s0.k, 1
  store i64 %s0.k.next, ptr %s0.k.slot
  br label %s0.tree.head
s0.tree.done:
  %s0.total0 = load float, ptr %s0.stack0, align 4
  %s0.value0.empty = icmp eq i64 %len, 0
  %s0.value0.sum = select i1 %s0.value0.empty, float 0x0000000000000000, float %s0.total0 ; the empty sum is +0
  %s0.rv0.p = getelementptr inbounds i8, ptr %rv, i64 0
  store float %s0.value0.sum, ptr %s0.rv0.p, align 4                         ; row value of reduction 0: sum float32 -> float32 (test_llvm_golden.cpp:101)
  %rv0.p = getelementptr inbounds i8, ptr %rv, i64 0
  %rv0 = load float, ptr %rv0.p, align 4                                     ; row value of reduction 0
  %row.out0.p = getelementptr inbounds float, ptr %row.out0, i64 %o
  store float %rv0, ptr %row.out0.p, align 4                                 ; store row output 0
  %o.next = add i64 %o, 1
  store i64 %o.next, ptr %o.slot
  br label %row.cond
exit:
  ret void
}

declare i64 @llvm.smax.i64(i64, i64)
declare i64 @llvm.smin.i64(i64, i64)
declare i64 @llvm.umin.i64(i64, i64)

attributes #0 = { nounwind "denormal-fp-math"="ieee,ieee" "no-trapping-math"="true" }
attributes #1 = { nounwind alwaysinline "denormal-fp-math"="ieee,ieee" "no-trapping-math"="true" }
