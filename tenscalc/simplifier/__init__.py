"""simplifier"""
